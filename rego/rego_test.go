package harnessrego

import (
	"bytes"
	"testing"
)

func TestSources(t *testing.T) {
	t.Parallel()
	policy, tests := Policy(), Tests()
	if len(policy) != 1 || policy[0].Name != "harness.rego" || !bytes.Contains(policy[0].Source, []byte("\npackage harness\n")) {
		t.Errorf("policy modules: %v", names(policy))
	}
	if len(tests) != 1 || tests[0].Name != "harness_test.rego" || !bytes.Contains(tests[0].Source, []byte("\npackage harness.tests\n")) {
		t.Errorf("test modules: %v", names(tests))
	}
}

func names(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}
