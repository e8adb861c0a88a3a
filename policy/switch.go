package policy

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Who asks for a role switch.
const (
	ByAgent    = "agent"    // under the switch rules
	ByOperator = "operator" // may enter privileged roles
)

// CodeSwitchDenied is the code of a refused switch's reasons.
const CodeSwitchDenied = "switch_denied"

// SwitchInput is a request to change a session's active role.
type SwitchInput struct {
	From    string `json:"from"`
	To      string `json:"to"`
	By      string `json:"by"`
	Session string `json:"session"`
	Agent   string `json:"agent"`
	// MaxRole is the most privileged role the agent may hold ("" for no
	// such bound): an agent may switch only to the roles within it.
	MaxRole string `json:"max_role,omitempty"`
}

// SwitchDecision is data.harness.switch: whether the switch may happen and,
// if not, the rules that refused it (each reason names its rule).
type SwitchDecision struct {
	Allowed bool     `json:"allowed"`
	From    string   `json:"from"`
	To      string   `json:"to"`
	By      string   `json:"by"`
	Reasons []Reason `json:"reasons"`
}

// Switch decides a role switch. Like Decide, it fails closed: anything
// that goes wrong refuses the switch and says why.
func (e *Engine) Switch(ctx context.Context, in SwitchInput) (SwitchDecision, error) {
	refused := func(msg string) SwitchDecision {
		return SwitchDecision{From: in.From, To: in.To, By: in.By,
			Reasons: []Reason{{Code: CodeSwitchDenied, Rule: CodeEvalError, Message: msg}}}
	}
	if err := ctx.Err(); err != nil {
		return refused("policy evaluation stopped: " + err.Error()), err
	}
	input := ast.NewObject(
		ast.Item(ast.StringTerm("from"), ast.StringTerm(in.From)),
		ast.Item(ast.StringTerm("to"), ast.StringTerm(in.To)),
		ast.Item(ast.StringTerm("by"), ast.StringTerm(in.By)),
		ast.Item(ast.StringTerm("session"), ast.StringTerm(in.Session)),
		ast.Item(ast.StringTerm("agent"), ast.StringTerm(in.Agent)),
		ast.Item(ast.StringTerm("max_role"), ast.StringTerm(in.MaxRole)),
	)
	rs, err := e.cur.Load().switch_.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return refused("policy evaluation failed: " + err.Error()), nil
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return refused("policy evaluation failed: " + SwitchQuery + " is undefined"), nil
	}
	r := reader{}
	m := r.object(rs[0].Expressions[0].Value, "switch")
	d := SwitchDecision{
		Allowed: r.boolean(m, "allowed"),
		From:    r.str(m, "from"),
		To:      r.str(m, "to"),
		By:      r.str(m, "by"),
		Reasons: r.reasons(m, "reasons"),
	}
	switch {
	case r.err != nil:
		return refused("policy evaluation failed: malformed switch decision: " + r.err.Error()), nil
	case d.Allowed != (len(d.Reasons) == 0):
		return refused(fmt.Sprintf("policy evaluation failed: allowed=%v with %d reasons", d.Allowed, len(d.Reasons))), nil
	}
	return d, nil
}
