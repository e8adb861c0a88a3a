package policy

import (
	"context"
	"fmt"

	"github.com/agentharness/harness/contract"
	"github.com/open-policy-agent/opa/v1/ast"
)

// Switch decides a role switch. Like Decide, it fails closed: anything
// that goes wrong refuses the switch and says why.
func (e *Engine) Switch(ctx context.Context, in contract.SwitchInput) (contract.SwitchDecision, error) {
	refused := func(msg string) contract.SwitchDecision {
		return contract.SwitchDecision{From: in.From, To: in.To, By: in.By,
			Reasons: []contract.Reason{{Code: contract.CodeSwitchDenied, Rule: contract.CodeEvalError, Message: msg}}}
	}
	if err := ctx.Err(); err != nil {
		return refused("policy evaluation stopped: " + err.Error()), err
	}
	input := switchInput(in)
	l := e.cur.Load()
	pq, err := l.prepared(ctx, SwitchQuery)
	if err != nil {
		return refused("policy evaluation failed: " + err.Error()), nil
	}
	b := e.bounded(ctx)
	defer b.stop()
	v, err := l.evalPlanned(b, SwitchQuery, pq, input)
	if b.over() {
		msg, err := b.stopped()
		return refused(msg), err
	}
	if err != nil {
		return refused("policy evaluation failed: " + err.Error()), nil
	}
	if v == nil {
		return refused("policy evaluation failed: " + SwitchQuery + " is undefined"), nil
	}
	r := reader{}
	m := r.object(v, "switch")
	d := contract.SwitchDecision{
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

// switchInput is the input of the switch entry points.
func switchInput(in contract.SwitchInput) ast.Object {
	return ast.NewObject(
		ast.Item(ast.StringTerm("from"), ast.StringTerm(in.From)),
		ast.Item(ast.StringTerm("to"), ast.StringTerm(in.To)),
		ast.Item(ast.StringTerm("by"), ast.StringTerm(in.By)),
		ast.Item(ast.StringTerm("session"), ast.StringTerm(in.Session)),
		ast.Item(ast.StringTerm("agent"), ast.StringTerm(in.Agent)),
		ast.Item(ast.StringTerm("max_role"), ast.StringTerm(in.MaxRole)),
	)
}
