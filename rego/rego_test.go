package harnessrego

import (
	"bytes"
	"slices"
	"testing"
)

func TestSources(t *testing.T) {
	t.Parallel()
	policy, tests := Policy(), Tests()
	if got := names(policy); !slices.Equal(got, []string{"decision.rego", "harness.rego", "switch.rego"}) {
		t.Errorf("policy modules: %v", got)
	}
	if got := names(tests); !slices.Equal(got, []string{"fixture_test.rego", "harness_test.rego", "switch_test.rego"}) {
		t.Errorf("test modules: %v", got)
	}
	for _, f := range policy {
		if !bytes.Contains(f.Source, []byte("\npackage harness\n")) {
			t.Errorf("%s is not in package harness", f.Name)
		}
	}
	for _, f := range tests {
		if !bytes.Contains(f.Source, []byte("\npackage harness.tests\n")) {
			t.Errorf("%s is not in package harness.tests", f.Name)
		}
	}
}

func names(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}
