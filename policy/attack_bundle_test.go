package policy

import (
	"context"
	"os"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/roles"
)

// A project's *_test.rego files go into the compiled bundle, which a stock
// OPA serves as the harness's decisions ("the same decisions from a stock
// OPA"). There a test module is an ordinary module: in a package of the
// data document (harness.config.exempt_tools) or of a user's policy, it
// adds to what decides, and the bundle allows what the harness denies. A
// test file must not be able to change a decision, in the harness or in
// its bundle.
func TestAttackBundleTestModuleChangesStockOPA(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set, err := roles.LoadDefs()
	if err != nil {
		t.Fatal(err)
	}
	doc := compiler.Compile(set, compiler.DefaultConfig())
	user, err := os.ReadFile("../examples/policies/edit_in_project.rego")
	if err != nil {
		t.Fatal(err)
	}
	userPolicy := compiler.Module{Name: "policies/user/edit_in_project.rego", Source: user}
	cases := []struct {
		name   string
		custom []compiler.Module
		input  map[string]any
	}{
		{"a test module that makes the shell exempt", []compiler.Module{
			{Name: "policies/project/x_test.rego", Source: []byte("package harness.config.exempt_tools\n\nctx_shell := true\n")},
		}, map[string]any{"role": "reviewer", "tool": "ctx_shell", "shell_policy": "track", "arguments": map[string]any{},
			"budget": map[string]any{"tokens": 0, "shell": 0, "cost_micros": 0}}},
		{"a project test module in a user's policy package", []compiler.Module{userPolicy,
			{Name: "policies/project/x_test.rego", Source: []byte("package harness.custom.edit_in_project\n\ninside(_) := true\n")},
		}, map[string]any{"role": "coder", "tool": "ctx_edit", "shell_policy": "track", "arguments": map[string]any{"path": "/etc/passwd"},
			"budget": map[string]any{"tokens": 0, "shell": 0, "cost_micros": 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, err := New(ctx, doc, c.custom...)
			if err != nil {
				return // refused: fails closed
			}
			rs, err := rawQuery(t, e, "data.harness.decision.decision").Eval(ctx, rego.EvalInput(c.input))
			if err != nil || len(rs) != 1 {
				return // the bundle does not decide: no allow
			}
			if got := rs[0].Expressions[0].Value; got != "deny" {
				t.Errorf("the bundle's decision with the test module: %v, want deny", got)
			}
		})
	}
}
