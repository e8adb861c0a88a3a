package policy

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/policy/plan"
)

// viewEntryPoints are the entry points beside the decision, each evaluated
// from its plan like the decision.
var viewEntryPoints = []string{StatusQuery, LevelsQuery, VisibleQuery, AllowanceQuery, ExplanationQuery, SwitchQuery, SwitchTargetQuery}

// checkPlanned evaluates entry point q on input from its plan and with
// topdown, and fails unless both give the same value, or neither gives
// one (undefined or an error: the engine then answers with topdown's). It
// reports whether the plan gave a value.
func checkPlanned(t testing.TB, e *Engine, q string, input ast.Value) bool {
	t.Helper()
	ctx := context.Background()
	l := e.cur.Load()
	p, err := l.waitPlan(q)
	if p == nil {
		t.Fatalf("%s: no plan: %v", q, err)
	}
	got, perr := p.Eval(ctx, input, plan.Options{Values: l.values})
	pq, err := l.prepared(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want, terr := l.run(ctx, pq, input)
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil || got.Compare(want) != 0:
		t.Fatalf("%s on %v:\nplan    %v %v\ntopdown %v %v", q, input, got, perr, want, terr)
	}
	return got != nil
}

// viewEngine is the engine of the differential grids' document (roles
// with every kind of threshold, agents with budgets, protected paths) and
// a custom policy.
func viewEngine(t testing.TB, doc *compiler.Document) *Engine {
	t.Helper()
	e, err := New(context.Background(), doc, compiler.Module{Name: "p.rego", Source: []byte(fastPathPolicy)})
	if err != nil {
		t.Fatal(err)
	}
	return relaxed(e)
}

// The plans of the entry points beside the decision agree with topdown on
// a grid of what the engine asks them (every role and an unknown one, its
// usages around each threshold, agents with and without budgets, tools of
// every origin and kind, switches between every pair of roles) and on
// malformed inputs, which no caller of the engine builds but which must
// not tell the two apart either.
func TestViewsAgreeWithTopdown(t *testing.T) {
	doc := cacheDoc(t)
	e := viewEngine(t, doc)
	names := append(slices.Sorted(maps.Keys(doc.Roles)), "nobody")
	agents := []struct {
		name  string
		usage *contract.Usage
	}{{"none", nil}, {"budgeted", &contract.Usage{Tokens: 900, Shell: 2}}, {"budgeted", &contract.Usage{Tokens: 1000}},
		{"shell-only", &contract.Usage{Shell: 1}}, {"cost-only", &contract.Usage{CostMicros: 4_500_000}}}
	tools := []contract.Tool{{Name: "ctx_read"}, {Name: "ctx_shell"}, {Name: "ctx_edit"}, {Name: "ctx_session"},
		{Name: "lean__ctx_shell", Upstream: "lean", UpstreamTool: "ctx_shell"}, {Name: "mcp__server7__query"},
		{Name: "tool_3_x"}, {Name: "danger_1"}, {Name: ""}, {Name: "Ctx_Edit"}}
	counts, seen := map[string][2]int{}, map[string]int{}
	check := func(q string, input ast.Value) {
		if seen[q]++; seen[q]%stride != 1%stride {
			return // under the race detector, a sample
		}
		c := counts[q]
		c[0]++
		if checkPlanned(t, e, q, input) {
			c[1]++
		}
		counts[q] = c
	}
	for i, role := range names {
		us := usages(doc.Roles[role])
		if r, ok := doc.Roles[role]; ok {
			us = append(us, pastAThreshold(r)...)
		}
		for _, u := range us {
			for _, a := range agents {
				in := contract.Input{Role: role, Budget: u, Agent: a.name, AgentBudget: a.usage}
				check(StatusQuery, statusValue(in))
				check(AllowanceQuery, statusValue(in))
				other := RoleUsage{Role: names[(i+1)%len(names)], Usage: u, Agent: a.name, AgentUsage: a.usage}
				check(LevelsQuery, levelsInput([]RoleUsage{{Role: role, Usage: u, Agent: a.name, AgentUsage: a.usage}, other}))
			}
		}
		check(VisibleQuery, visibleInput(role, tools))
		for _, tool := range tools {
			for _, args := range []map[string]any{{"path": "main.go"}, {"path": "secret"}, {"command": "harness role set admin"}} {
				in := contract.Input{Role: role, Tool: tool.Name, Upstream: tool.Upstream, UpstreamTool: tool.UpstreamTool,
					Arguments: args, Session: "s", Agent: "budgeted", Budget: contract.Usage{Shell: 1}}
				value, err := inputValue(in, e.cur.Load().shellPolicy(role))
				if err != nil {
					t.Fatal(err)
				}
				check(ExplanationQuery, value)
			}
		}
		for _, to := range names {
			for _, by := range []string{"agent", "user", ""} {
				for _, max := range []string{"", "coder", role} {
					in := contract.SwitchInput{From: role, To: to, By: by, Session: "s", Agent: "a", MaxRole: max}
					check(SwitchQuery, switchInput(in))
					in.To = ""
					check(SwitchTargetQuery, switchInput(in))
				}
			}
		}
	}
	// Malformed: what no caller builds, each entry point's input with
	// members of the wrong type, missing, or numbers of every kind.
	for _, raw := range []string{
		`{}`, `{"role": 7}`, `{"role": "coder"}`, `{"role": "coder", "budget": "x"}`,
		`{"role": "coder", "budget": {"tokens": 1.5, "shell": -3, "cost_micros": 1e30}}`,
		`{"role": "coder", "budget": {"tokens": 170000}, "agent": "budgeted", "agent_budget": {"tokens": "x"}}`,
		`{"role": "coder", "tools": "ctx_read"}`, `{"role": "coder", "tools": [{"name": 1}, "x", {"name": "ctx_read", "upstream": null}]}`,
		`{"usages": [{}, {"role": "coder"}, 3]}`, `{"usages": {"role": "coder"}}`,
		`{"from": "coder", "to": ["admin"], "by": "agent"}`, `{"from": "coder", "to": "admin", "by": 1, "max_role": "admin"}`,
		`{"role": "coder", "tool": 3, "arguments": []}`, `{"role": "coder", "tool": "ctx_read", "arguments": {"path": {"a": [1]}}}`,
	} {
		input := ast.MustParseTerm(raw).Value
		for _, q := range viewEntryPoints {
			check(q, input)
		}
	}
	for _, q := range viewEntryPoints {
		c := counts[q]
		t.Logf("%s: %d inputs, %d given a value by the plan", q, c[0], c[1])
		// Every well-formed input has a value: were the plan to give
		// none, topdown would answer and the grid would test nothing.
		if c[1] < c[0]-20/stride || c[1] == 0 {
			t.Errorf("%s: the plan gave a value for %d of %d inputs", q, c[1], c[0])
		}
	}
}

// FuzzViewsAgree holds the plans of the entry points beside the decision
// equal to topdown on what an agent chooses: role and tool names, usages.
func FuzzViewsAgree(f *testing.F) {
	doc := cacheDoc(&testing.T{})
	e := viewEngine(f, doc)
	names := append(slices.Sorted(maps.Keys(doc.Roles)), "nobody")
	agents := []string{"none", "budgeted", "shell-only", "cost-only"}
	f.Add(uint8(0), "ctx_read", uint8(1), int64(0), int64(0), int64(0), int64(10), int64(1), "agent")
	f.Add(uint8(3), "ctx_shell", uint8(2), int64(170000), int64(99), int64(100), int64(50), int64(3), "user")
	f.Add(uint8(7), "lean__ctx_edit", uint8(3), int64(-1), int64(1<<40), int64(0), int64(1<<40), int64(-7), "")
	f.Fuzz(func(t *testing.T, role uint8, tool string, agent uint8, tokens, shell, cost, agentTokens, agentShell int64, by string) {
		r := names[int(role)%len(names)]
		in := contract.Input{Role: r, Budget: contract.Usage{Tokens: tokens, Shell: shell, CostMicros: cost},
			Agent: agents[int(agent)%len(agents)], AgentBudget: &contract.Usage{Tokens: agentTokens, Shell: agentShell}}
		checkPlanned(t, e, StatusQuery, statusValue(in))
		checkPlanned(t, e, AllowanceQuery, statusValue(in))
		checkPlanned(t, e, LevelsQuery, levelsInput([]RoleUsage{{Role: r, Usage: in.Budget, Agent: in.Agent, AgentUsage: in.AgentBudget},
			{Role: tool, Usage: contract.Usage{Shell: agentShell}}}))
		checkPlanned(t, e, VisibleQuery, visibleInput(r, []contract.Tool{{Name: tool}, {Name: "x__" + tool, Upstream: "x", UpstreamTool: tool}}))
		in.Tool, in.Arguments, in.Session = tool, map[string]any{"path": tool, "command": tool}, "s"
		value, err := inputValue(in, e.cur.Load().shellPolicy(r))
		if err != nil {
			t.Fatal(err)
		}
		checkPlanned(t, e, ExplanationQuery, value)
		sw := contract.SwitchInput{From: r, To: tool, By: by, Session: "s", Agent: in.Agent, MaxRole: names[int(agent)%len(names)]}
		checkPlanned(t, e, SwitchQuery, switchInput(sw))
		sw.To = ""
		checkPlanned(t, e, SwitchTargetQuery, switchInput(sw))
	})
}

// Every entry point is planned once asked twice, not once asked once; its
// answers through the engine are then the plan's.
func TestViewsArePlanned(t *testing.T) {
	doc := cacheDoc(t)
	e := viewEngine(t, doc)
	ctx := context.Background()
	in := contract.Input{Role: "coder", Budget: contract.Usage{Tokens: 170000, Shell: 3}, Agent: "budgeted", AgentBudget: &contract.Usage{Shell: 2}}
	for i := range 2 {
		if i == 1 {
			// Asked once, nothing is planned: a command that asks once
			// never pays for it.
			for _, q := range append(viewEntryPoints, Query) {
				if e.cur.Load().planOf(q).done != nil {
					t.Errorf("%s: planning started after one call", q)
				}
			}
		}
		if _, err := e.Status(ctx, in); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Allowance(ctx, in); err != nil {
			t.Fatal(err)
		}
		e.SetCaching(false) // Levels from the policy, not its cache
		if _, err := e.Levels(ctx, RoleUsage{Role: "coder", Usage: in.Budget}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Visible(ctx, "coder", contract.Named("ctx_read", "ctx_edit")); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Explain(ctx, contract.Input{Role: "coder", Tool: "ctx_read", Session: "s"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Switch(ctx, contract.SwitchInput{From: "coder", To: "reviewer", By: "agent"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.SwitchTargets(ctx, contract.SwitchInput{From: "coder", By: "agent"}); err != nil {
			t.Fatal(err)
		}
	}
	l := e.cur.Load()
	for _, q := range viewEntryPoints {
		if qp := l.planOf(q); qp.done == nil { // made by the second call, which starts planning
			t.Errorf("%s: asked twice, its planning has not started", q)
			continue
		}
		if p, err := l.waitPlan(q); p == nil {
			t.Errorf("%s: no plan: %v", q, err)
		}
	}
	// Now from the plans: the same answers as topdown gives.
	st, err := e.Status(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if st.Budget.Tokens.Used != 170000 || st.Signal == "" {
		t.Errorf("status from the plan: %+v", st)
	}
	checkPlanned(t, e, StatusQuery, statusValue(in))
}
