package policy

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentharness/harness/contract"
)

// A decision's budget is read dimension by dimension; one that is not an
// object is named in the error, whichever it is, and reading a well-formed
// decision builds no such name (nor anything else, but its reasons).
func TestDecisionFromNamesTheDimension(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	in := contract.Input{Role: "coder", Tool: "ctx_read"}
	v, err := e.eval(ctx, Query, mustInput(t, in))
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = decisionFrom(v) }); n > 0 {
		t.Errorf("reading an allowed decision: %v allocations, want none", n)
	}
	for _, tt := range []struct{ dim, want string }{
		{"tokens", "budget.tokens: want an object, got string"},
		{"shell", "budget.shell: want an object, got string"},
		{"cost", "budget.cost: want an object, got string"},
	} {
		t.Run(tt.dim, func(t *testing.T) {
			t.Parallel()
			o := v.(ast.Object).Copy()
			b := o.Get(ast.StringTerm("budget")).Value.(ast.Object).Copy()
			b.Insert(ast.StringTerm(tt.dim), ast.StringTerm("x"))
			o.Insert(ast.StringTerm("budget"), ast.NewTerm(b))
			if _, err := decisionFrom(o); err == nil || err.Error() != tt.want {
				t.Errorf("%v, want %q", err, tt.want)
			}
		})
	}
}

func mustInput(t *testing.T, in contract.Input) ast.Value {
	t.Helper()
	v, err := inputValue(in, "")
	if err != nil {
		t.Fatal(err)
	}
	return v
}
