package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecisionWork holds the statements each of BenchmarkDecide's calls
// runs in the decision's plan to testdata/decision-statements.txt. The
// count is the evaluation's work, the same on every run and machine, so a
// change to the policy or the plan that makes a decision do more (or
// less) shows in the diff of that file, which go test -update rewrites;
// what it costs in time is BenchmarkDecide's to say.
func TestDecisionWork(t *testing.T) {
	e := benchEngine(t)
	var out strings.Builder
	fmt.Fprintln(&out, "# Statements of the decision's plan each call of BenchmarkDecide runs.")
	fmt.Fprintln(&out, "# Written by go test ./policy -run TestDecisionWork -update.")
	for _, tt := range benchCases() {
		n := statements(t, e, tt.in)
		if n <= 0 {
			t.Fatalf("%s: %d statements", tt.name, n)
		}
		fmt.Fprintf(&out, "%-5s %-36s %5d\n", tt.want, tt.name, n)
	}
	path := filepath.Join("testdata", "decision-statements.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./policy -run TestDecisionWork -update writes it)", err)
	}
	if out.String() != string(want) {
		t.Errorf("the decisions' work differs from %s (go test ./policy -run TestDecisionWork -update rewrites it):\n--- got\n%s--- want\n%s", path, out.String(), want)
	}
}
