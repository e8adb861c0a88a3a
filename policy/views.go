package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// The engine's answers beside decisions: what a role's listing shows, a
// session's budget without a call, why a decision is what it is, and where
// a switch may go. Each asks an entry point of the policy, so that the
// gateway, the hook and the CLI never work out a rule of their own.

// ErrUnknownRole is the error of a question about a role the data does not
// define.
var ErrUnknownRole = errors.New("role is not defined")

// viewQueries are the entry points that evaluate none of the custom
// policies' rules (see boundedView).
var viewQueries = map[string]bool{StatusQuery: true, LevelsQuery: true, VisibleQuery: true, AllowanceQuery: true}

// eval evaluates entry point q on input, within the engine's bounds, and
// returns its one value.
func (e *Engine) eval(ctx context.Context, q string, input ast.Value) (ast.Value, error) {
	return e.evalOn(ctx, e.cur.Load(), q, input)
}

func (e *Engine) evalOn(ctx context.Context, l *loaded, q string, input ast.Value) (ast.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pq, err := l.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	bounded := e.bounded
	if viewQueries[q] {
		bounded = e.boundedView
	}
	b := bounded(ctx)
	defer b.stop()
	v, err := l.evalPlanned(b, q, pq, input)
	if b.over() {
		msg, perr := b.stopped()
		if perr != nil {
			return nil, perr
		}
		return nil, errors.New(msg)
	}
	if err != nil {
		return nil, fmt.Errorf("policy evaluation failed: %w", err)
	}
	if v == nil {
		return nil, fmt.Errorf("policy evaluation failed: %s is undefined", q)
	}
	return v, nil
}

// Status is the budget of a session's usage (in.Budget) under its role
// (in.Role), and of its agent's (in.Agent, in.AgentBudget) when the agent
// has a budget, by the policy's rules 4 and 5: the status line, and the
// levels a change of usage or role crosses. An unknown role is
// ErrUnknownRole (with its limits all 0 in the status).
func (e *Engine) Status(ctx context.Context, in contract.Input) (contract.Status, error) {
	v, err := e.eval(ctx, StatusQuery, statusValue(in))
	if err != nil {
		return contract.Status{}, err
	}
	r := reader{}
	m := r.object(v, "status")
	st := contract.Status{Role: r.str(m, "role"), Signal: r.str(m, "signal"), Budget: r.budget(m), AgentBudget: r.agentBudget(m)}
	defined := r.boolean(m, "defined")
	if r.err != nil {
		return contract.Status{}, fmt.Errorf("policy evaluation failed: malformed status: %w", r.err)
	}
	if !defined {
		return st, fmt.Errorf("%w: %q", ErrUnknownRole, in.Role)
	}
	return st, nil
}

// RoleUsage is a usage under a role, and the usage of its agent in the
// period of the agent's budget (nil when none applies).
type RoleUsage struct {
	Role       string
	Usage      contract.Usage
	Agent      string
	AgentUsage *contract.Usage
}

// Levels are the levels of a usage's dimensions under its role, and its
// signal (the worst), by the policy's rule 5. Defined is false for a role
// the data does not define (its levels are then ""). Agent holds the
// levels of the dimensions the agent's budget bounds ("tokens", "shell",
// "cost"), nil when it has none.
type Levels struct {
	Tokens, Shell, Cost, Signal string
	Defined                     bool
	Agent                       map[string]string
}

// Levels measures several usages, each under its role, in one evaluation:
// how a change of usage or of role is seen to cross into WARNING or
// EXHAUSTED. It is cheaper than a Status of each. Usages in the band of
// the decision cache (every dimension below its thresholds) are measured
// once per role, agent and band (see levelsCache).
func (e *Engine) Levels(ctx context.Context, usages ...RoleUsage) ([]Levels, error) {
	l := e.cur.Load()
	cached := !e.uncached.Load()
	if cached {
		if out, ok := l.levels.get(l.doc, usages); ok {
			return out, nil
		}
	}
	out, err := e.levelsOf(ctx, l, usages)
	if err == nil && cached {
		l.levels.put(l.doc, usages, out)
	}
	return out, err
}

// levelsOf evaluates the levels of usages on generation l.
func (e *Engine) levelsOf(ctx context.Context, l *loaded, usages []RoleUsage) ([]Levels, error) {
	v, err := e.evalOn(ctx, l, LevelsQuery, levelsInput(usages))
	if err != nil {
		return nil, err
	}
	items, ok := v.(*ast.Array)
	if !ok || items.Len() != len(usages) {
		return nil, fmt.Errorf("policy evaluation failed: %s: want %d levels, got %v", LevelsQuery, len(usages), v)
	}
	out := make([]Levels, items.Len())
	for i := range items.Len() {
		item := items.Elem(i).Value
		if _, null := item.(ast.Null); null {
			continue
		}
		r := reader{}
		m := r.object(item, "levels")
		out[i] = Levels{Tokens: r.str(m, "tokens"), Shell: r.str(m, "shell"), Cost: r.str(m, "cost"), Signal: r.str(m, "signal"), Defined: true}
		if a, ok := get(m, "agent").(ast.Object); ok {
			out[i].Agent = map[string]string{}
			for _, dim := range a.Keys() {
				if name, ok := dim.Value.(ast.String); ok {
					out[i].Agent[string(name)] = r.str(a, string(name))
				}
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("policy evaluation failed: malformed levels: %w", r.err)
		}
	}
	return out, nil
}

// Visible returns the names of the tools of tools that role may call by
// its tool lists and shell policy (exempt tools always): what a listing
// shows. Budgets and custom policies are left to the call. On an error it
// returns none.
func (e *Engine) Visible(ctx context.Context, role string, tools []contract.Tool) (map[string]bool, error) {
	v, err := e.eval(ctx, VisibleQuery, visibleInput(role, tools))
	if err != nil {
		return map[string]bool{}, err
	}
	items, ok := v.(ast.Set)
	if !ok {
		return map[string]bool{}, fmt.Errorf("policy evaluation failed: %s: want a set, got %s", VisibleQuery, typeName(v))
	}
	out := make(map[string]bool, items.Len())
	items.Foreach(func(item *ast.Term) {
		if s, ok := item.Value.(ast.String); ok {
			out[string(s)] = true
		}
	})
	return out, nil
}

// visibleInput is the input of VisibleQuery: a role and tools.
func visibleInput(role string, tools []contract.Tool) ast.Value {
	list := make([]*ast.Term, len(tools))
	for i, t := range tools {
		list[i] = ast.ObjectTerm(
			ast.Item(ast.StringTerm("name"), ast.StringTerm(t.Name)),
			ast.Item(ast.StringTerm("upstream"), ast.StringTerm(t.Upstream)),
			ast.Item(ast.StringTerm("upstream_tool"), ast.StringTerm(t.UpstreamTool)),
		)
	}
	return ast.NewObject(
		ast.Item(ast.StringTerm("role"), ast.StringTerm(role)),
		ast.Item(ast.StringTerm("tools"), ast.ArrayTerm(list...)),
	)
}

// Explanation is what the policy says of a decision for people: the
// decision, what kind of tool it is, every pattern of the role's lists
// that matches the tool, and the role's limits and thresholds.
type Explanation struct {
	Decision   contract.Decision             `json:"decision"`
	Exempt     bool                          `json:"exempt"`
	ShellTool  bool                          `json:"shell_tool"`
	DeniedBy   []string                      `json:"denied_by"`
	AllowedBy  []string                      `json:"allowed_by"`
	AskedBy    []string                      `json:"asked_by"`
	Limits     compiler.LimitsDoc            `json:"limits"`
	Thresholds map[string]compiler.Threshold `json:"thresholds"`
}

// Explain decides in and says why.
func (e *Engine) Explain(ctx context.Context, in contract.Input) (Explanation, error) {
	l := e.cur.Load()
	value, err := inputValue(in, l.shellPolicy(in.Role))
	if err != nil {
		return Explanation{Decision: denied(in, contract.CodeInvalidInput, err.Error())}, nil
	}
	v, err := e.evalOn(ctx, l, ExplanationQuery, value)
	if err != nil {
		return Explanation{}, err
	}
	var x Explanation
	j, err := ast.JSON(v)
	var b []byte
	if err == nil {
		b, err = json.Marshal(j)
	}
	if err == nil {
		err = json.Unmarshal(b, &x)
	}
	if err != nil {
		return Explanation{}, fmt.Errorf("policy evaluation failed: malformed explanation: %w", err)
	}
	return x, nil
}

// SwitchTargets says of every role whether the switch in (its To ignored)
// may reach it.
func (e *Engine) SwitchTargets(ctx context.Context, in contract.SwitchInput) (map[string]bool, error) {
	in.To = ""
	v, err := e.eval(ctx, SwitchTargetQuery, switchInput(in))
	if err != nil {
		return nil, err
	}
	m, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("policy evaluation failed: %s: want an object, got %s", SwitchTargetQuery, typeName(v))
	}
	out := make(map[string]bool, m.Len())
	m.Foreach(func(name, allowed *ast.Term) {
		if n, ok := name.Value.(ast.String); ok {
			out[string(n)] = allowed.Value.Compare(ast.Boolean(true)) == 0
		}
	})
	return out, nil
}

// Allowance is how much more of tokens and cost (micro-dollars) a session
// may spend before a budget of its role or its agent is exhausted: nil for
// a dimension no budget bounds.
type Allowance struct {
	Tokens, Cost *int64
}

// Allowance asks the policy what the session of in (its role, usage, and
// its agent's usage) may still spend: what a result may still bring into
// the agent's context.
func (e *Engine) Allowance(ctx context.Context, in contract.Input) (Allowance, error) {
	v, err := e.eval(ctx, AllowanceQuery, statusValue(in))
	if err != nil {
		return Allowance{}, err
	}
	m, ok := v.(ast.Object)
	if !ok {
		return Allowance{}, fmt.Errorf("policy evaluation failed: %s: want an object, got %s", AllowanceQuery, typeName(v))
	}
	var a Allowance
	r := reader{}
	for _, dim := range []struct {
		key string
		dst **int64
	}{{"tokens", &a.Tokens}, {"cost", &a.Cost}} {
		if _, null := get(m, dim.key).(ast.Null); null {
			continue
		}
		n := r.integer(m, dim.key)
		*dim.dst = &n
	}
	if r.err != nil {
		return Allowance{}, fmt.Errorf("policy evaluation failed: malformed allowance: %w", r.err)
	}
	return a, nil
}

// levelsInput is the input of LevelsQuery: usages, each under its role.
func levelsInput(usages []RoleUsage) ast.Value {
	list := make([]*ast.Term, len(usages))
	for i, u := range usages {
		list[i] = ast.NewTerm(statusValue(contract.Input{Role: u.Role, Budget: u.Usage, Agent: u.Agent, AgentBudget: u.AgentUsage}))
	}
	return ast.NewObject(ast.Item(ast.StringTerm("usages"), ast.ArrayTerm(list...)))
}

// statusValue is the input of the views of a session's budget: its role
// and usage, its agent and the agent's usage.
func statusValue(in contract.Input) ast.Value {
	o := ast.NewObject(
		ast.Item(ast.StringTerm("role"), ast.StringTerm(in.Role)),
		ast.Item(ast.StringTerm("budget"), usageTerm(in.Budget)),
		ast.Item(ast.StringTerm("agent"), ast.StringTerm(in.Agent)),
	)
	if in.AgentBudget != nil {
		o.Insert(ast.StringTerm("agent_budget"), usageTerm(*in.AgentBudget))
	}
	return o
}
