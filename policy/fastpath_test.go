package policy

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/roles"
)

// fastPathRoles add to the test roles what the fast path must get right:
// a warning above the block threshold, a compressing shell, denied
// patterns of every kind, and limits of 0.
var fastPathRoles = map[string]string{
	// The loader refuses a role that warns above its block (see
	// warnAboveBlock); a data document made otherwise may still hold one.
	"warn-above-block": "[limits]\nmax_context_tokens = 1000\nmax_shell_invocations = 10\nwarn_at_percent = 90\nblock_at_percent = 90\n",
	"compress":         "[role]\nshell_policy = \"compress\"\n[limits]\nmax_shell_invocations = 3\n",
	"denies-some":      "[tools]\nallowed = [\"*\"]\ndenied = [\"ctx_edit\", \"mcp__*\", \"*_write\", \"*danger*\"]\n",
	"all-zero":         "[limits]\nmax_context_tokens = 0\nmax_shell_invocations = 0\nmax_cost_usd = 0.0\n",
	"asks":             "[tools]\ndenied = [\"ctx_edit\"]\nask = [\"ctx_shell\", \"mcp__*\", \"*_write\", \"a?b*\"]\n[limits]\nmax_shell_invocations = 3\n",
}

// warnAboveBlock lowers the block of the role "warn-above-block" to 50%,
// below its warning at 90%, as no role file may (the loader refuses it).
func warnAboveBlock(t *testing.T, set *roles.Set) {
	t.Helper()
	r, ok := set.Get("warn-above-block")
	if !ok {
		t.Fatal("no role warn-above-block")
	}
	r.Limits.BlockAtPercent = 50
}

// fastPathPolicy is a custom policy that denies and warns on arguments.
const fastPathPolicy = `package harness.custom.paths

deny contains "no secrets" if input.arguments.path == "secret"

warn contains "a big file" if input.arguments.path == "big"
`

// rawQuery prepares query on the engine's modules and data, as the engine
// prepares its own.
func rawQuery(t *testing.T, e *Engine, query string) rego.PreparedEvalQuery {
	t.Helper()
	b := e.Bundle()
	var opts []func(*rego.Rego)
	for _, m := range b.Modules {
		opts = append(opts, rego.Module(m.Location(), string(m.Source)))
	}
	store := inmem.NewFromReaderWithOpts(bytes.NewReader(b.Data), inmem.OptRoundTripOnWrite(false), inmem.OptReturnASTValuesOnRead(true))
	pq, err := rego.New(append(opts, rego.Query(query), rego.Store(store), rego.SetRegoVersion(ast.RegoV1),
		rego.Capabilities(Capabilities()), rego.StrictBuiltinErrors(true))...).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pq
}

// The one rule that decides common calls (decision's fast path) agrees with
// the rules one by one (full_decision) on every kind of call: every role,
// tools of each kind, usage around every threshold, arguments custom
// policies look at, and malformed input. The common calls do take it.
func TestFastPathAgreesWithTheRules(t *testing.T) {
	files := maps.Clone(testRoles)
	maps.Copy(files, fastPathRoles)
	set := testroles.Set(t, files)
	warnAboveBlock(t, set)
	doc := compiler.Compile(set, compiler.DefaultConfig())
	for _, custom := range []bool{false, true} {
		t.Run(fmt.Sprint("custom=", custom), func(t *testing.T) {
			var mods []compiler.Module
			if custom {
				mods = append(mods, compiler.Module{Name: "paths.rego", Source: []byte(fastPathPolicy)})
			}
			e, err := New(context.Background(), doc, mods...)
			if err != nil {
				t.Fatal(err)
			}
			fast, full := rawQuery(t, e, Query), rawQuery(t, e, "data.harness.full_decision")
			paths := []string{"main.go"}
			if custom {
				paths = append(paths, "secret", "big")
			}
			eval := func(pq rego.PreparedEvalQuery, in ast.Value, opts ...rego.EvalOption) any {
				rs, err := pq.Eval(context.Background(), append(opts, rego.EvalParsedInput(in))...)
				if err != nil || len(rs) != 1 {
					t.Fatalf("%v: %v %v", in, rs, err)
				}
				return rs[0].Expressions[0].Value
			}
			var inputs []ast.Value
			tools := []string{"ctx_read", "ctx_edit", "ctx_shell", "ctx_execute", "ctx_session", "mcp__fs__read",
				"mcp__github__create_issue", "file_write", "my_danger_tool", "axb", "a?bcd", ""}
			for _, name := range append(slices.Sorted(maps.Keys(doc.Roles)), "nobody") {
				r := doc.Roles[name]
				for _, tool := range tools {
					for _, u := range usages(r) {
						for _, path := range paths {
							v, err := inputValue(contract.Input{Role: name, Tool: tool, Budget: u, Session: "s", Agent: "a",
								Arguments: map[string]any{"path": path}}, r.ShellPolicy)
							if err != nil {
								t.Fatal(err)
							}
							inputs = append(inputs, v)
						}
					}
				}
			}
			complete := len(inputs) // the inputs with every field
			for _, raw := range []string{
				`{"role": "coder", "tool": "ctx_read"}`,
				`{"role": "coder", "tool": "ctx_read", "budget": {"tokens": 5}}`,
				`{"role": "coder", "tool": "ctx_read", "budget": {"tokens": 1.5, "shell": 0, "cost_micros": 0}}`,
				`{"role": "coder", "tool": "ctx_read", "budget": {"tokens": "1", "shell": 0, "cost_micros": 0}}`,
				`{"role": "coder", "tool": "ctx_read", "budget": [], "arguments": {}}`,
				`{"role": "coder", "tool": "ctx_read", "budget": {"tokens": 0, "shell": 0, "cost_micros": 0}, "arguments": []}`,
				`{"role": 7, "tool": "ctx_read", "budget": {"tokens": 0, "shell": 0, "cost_micros": 0}}`,
				`{"role": "coder", "tool": ["ctx_read"], "budget": {"tokens": 0, "shell": 0, "cost_micros": 0}}`,
			} {
				inputs = append(inputs, ast.MustParseTerm(raw).Value)
			}
			clear, missed := 0, 0
			for i, in := range inputs {
				if i < complete && i%stride != 0 {
					continue // a sample under the race detector (see stride)
				}
				got, want := eval(fast, in), eval(full, in)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("input %v:\ndecision      %v\nfull_decision %v", in, got, want)
				}
				// Every allow without warnings of a complete input and a tool
				// that is not exempt must come from the fast path (tracing is
				// slow: one input in 7 is checked).
				d := got.(map[string]any)
				if d["decision"] != contract.Allow || i >= complete || (i/stride)%7 != 0 || doc.Config.ExemptTools[d["tool"].(string)] {
					continue
				}
				clear++
				if usesFullDecision(t, func(o rego.EvalOption) { eval(fast, in, o) }) {
					missed++
					t.Errorf("not decided by the fast path: %v", in)
				}
			}
			t.Logf("%d inputs; %d plain allows checked, %d missed the fast path", len(inputs), clear, missed)
			if clear < 50/stride {
				t.Errorf("only %d plain allows among the inputs checked", clear)
			}
		})
	}
}

// The common calls take the fast path: the full rules are not evaluated.
func TestCommonCallsTakeTheFastPath(t *testing.T) {
	e := testEngine(t)
	for _, in := range []contract.Input{
		{Role: "coder", Tool: "ctx_read"},
		{Role: "coder", Tool: "mcp__github__create_issue", Budget: contract.Usage{Tokens: 1000, Shell: 3, CostMicros: 20000}},
		{Role: "ops", Tool: "ctx_shell", Budget: contract.Usage{Shell: 10}},
		{Role: "reviewer", Tool: "ctx_read", Arguments: map[string]any{"path": "main.go"}},
	} {
		var d contract.Decision
		full := usesFullDecision(t, func(o rego.EvalOption) {
			var err error
			if d, err = e.decide(context.Background(), in, o); err != nil {
				t.Fatal(err)
			}
		})
		if full || d.Decision != contract.Allow {
			t.Errorf("%+v: %s, full rules evaluated: %v", in, d.Decision, full)
		}
	}
}

// The commonest refusals, a tool the role's lists refuse with every budget
// below its warning, take the fast path too; a refusal with a warning does
// not.
func TestCommonRefusalsTakeTheFastPath(t *testing.T) {
	e := testEngine(t)
	for _, tt := range []struct {
		in   contract.Input
		code string
		full bool
	}{
		{contract.Input{Role: "reviewer", Tool: "ctx_edit"}, "tool_denied", false},
		{contract.Input{Role: "reviewer", Tool: "lean__x", Upstream: "lean", UpstreamTool: "ctx_shell"}, "tool_denied", false},
		{contract.Input{Role: "ctx-only", Tool: "read", Budget: contract.Usage{Tokens: 1000}}, "tool_not_allowed", false},
		{contract.Input{Role: "reviewer", Tool: "ctx_edit", Budget: contract.Usage{Tokens: 140000}}, "tool_denied", true},
		{contract.Input{Role: "no-shell", Tool: "ctx_shell"}, "shell_denied", true},
	} {
		var d contract.Decision
		full := usesFullDecision(t, func(o rego.EvalOption) {
			var err error
			if d, err = e.decide(context.Background(), tt.in, o); err != nil {
				t.Fatal(err)
			}
		})
		if full != tt.full || d.Decision != contract.Deny || d.Reasons[0].Code != tt.code {
			t.Errorf("%+v: %s %v, full rules evaluated: %v, want %s and %v", tt.in, d.Decision, d.Reasons, full, tt.code, tt.full)
		}
	}
}

// usesFullDecision runs eval with a tracer and reports whether the full
// rules were entered.
func usesFullDecision(t *testing.T, eval func(rego.EvalOption)) bool {
	t.Helper()
	buf := topdown.NewBufferTracer()
	eval(rego.EvalQueryTracer(buf))
	for _, ev := range *buf {
		if r, ok := ev.Node.(*ast.Rule); ok && ev.Op == topdown.EnterOp && r.Head.Name == "full_decision" {
			return true
		}
	}
	return false
}

// usages are the usages around every threshold of a role.
func usages(r compiler.RoleDoc) []contract.Usage {
	out := []contract.Usage{{}, {Tokens: -1}}
	for _, dim := range []string{"tokens", "shell", "cost"} {
		th := r.Thresholds[dim]
		points := []int64{th.WarnAt - 1, th.WarnAt}
		for _, p := range []*int64{th.ExhaustedAt, th.Admits} {
			if p != nil {
				points = append(points, *p-1, *p)
			}
		}
		for _, n := range points {
			if n < 0 {
				continue
			}
			u := contract.Usage{}
			switch dim {
			case "tokens":
				u.Tokens = n
			case "shell":
				u.Shell = n
			default:
				u.CostMicros = n
			}
			out = append(out, u)
		}
	}
	return out
}

// The fast path agrees with the rules where a call's tool comes from an
// upstream, its agent has a budget across sessions, its arguments touch
// the harness's own files or are malformed: every such input of a grid
// over roles, tool origins, agent usage around each threshold and
// arguments.
func TestFastPathAgreesOnOriginsAgentsAndProtection(t *testing.T) {
	files := maps.Clone(testRoles)
	maps.Copy(files, fastPathRoles)
	cfg := compiler.DefaultConfig()
	n := func(v int64) *int64 { return &v }
	cfg.AgentBudgets = map[string]compiler.AgentBudget{
		"budgeted":        {Period: "day", Tokens: n(1000), Shell: n(3), CostMicros: n(1_000_000), WarnPercent: 80, BlockPercent: 100},
		"shell-only":      {Period: "total", Shell: n(2), WarnPercent: 50, BlockPercent: 100},
		compiler.AnyAgent: {Period: "week", CostMicros: n(500), WarnPercent: 90, BlockPercent: 255},
	}
	cfg.Protect = compiler.Protect{Home: "/home/dev", Paths: []string{"/home/dev/.lean-ctx", "/srv/state"}}
	set := testroles.Set(t, files)
	warnAboveBlock(t, set)
	doc := compiler.Compile(set, cfg)
	e, err := New(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	fast, full := rawQuery(t, e, Query), rawQuery(t, e, "data.harness.full_decision")
	eval := func(pq rego.PreparedEvalQuery, in ast.Value) any {
		rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(in))
		if err != nil || len(rs) != 1 {
			t.Fatalf("%v: %v %v", in, rs, err)
		}
		return rs[0].Expressions[0].Value
	}
	origins := []contract.Tool{
		{Name: "ctx_shell"}, {Name: "ctx_read"}, {Name: "ctx_session"}, {Name: "ctx_edit"},
		{Name: "lean__ctx_shell", Upstream: "lean", UpstreamTool: "ctx_shell"},
		{Name: "lean__ctx_read", Upstream: "lean", UpstreamTool: "ctx_read"},
		{Name: "ctx_session", Upstream: "lean", UpstreamTool: "ctx_session"},
		{Name: "fs__write_file", Upstream: "fs", UpstreamTool: "write_file"},
		{Name: "mcp__gh__ctx_edit", Upstream: "gh", UpstreamTool: "ctx_edit"},
	}
	agentUsages := map[string][]*contract.Usage{
		"none":       {nil},
		"budgeted":   {nil, {}, {Tokens: 799}, {Tokens: 800}, {Tokens: 1000}, {Shell: 2}, {Shell: 3}, {CostMicros: 999_999}, {CostMicros: 1_000_000}, {Tokens: -1}},
		"shell-only": {{}, {Shell: 1}, {Shell: 2}, {Tokens: 1 << 40}, {Tokens: -1}, {CostMicros: -1}},
		"anyone":     {{}, {CostMicros: 449}, {CostMicros: 450}, {CostMicros: 5000}},
	}
	arguments := []any{
		nil, map[string]any{"path": "main.go"}, map[string]any{"path": "~/.lean-ctx/harness.toml"},
		map[string]any{"command": "ls -la"}, map[string]any{"command": "harness role set admin"},
		map[string]any{"command": "rm -rf /srv/state"}, "rm -rf /x",
	}
	roles := []string{"coder", "reviewer", "ops", "no-shell", "denies-some", "asks"}
	count, allows, seen := 0, 0, 0
	for _, role := range roles {
		for _, tool := range origins {
			for agent, list := range agentUsages {
				for _, au := range list {
					for _, args := range arguments {
						for _, u := range []contract.Usage{[]contract.Usage{{}, {Tokens: 199_999}, {Shell: 99}}[count%3]} {
							if seen++; seen%stride != 0 {
								continue // a sample under the race detector (see stride)
							}
							in, err := inputValue(contract.Input{Role: role, Tool: tool.Name, Upstream: tool.Upstream, UpstreamTool: tool.UpstreamTool,
								Arguments: args, Budget: u, AgentBudget: au, Session: "s", Agent: agent}, doc.Roles[role].ShellPolicy)
							if err != nil {
								t.Fatal(err)
							}
							got, want := eval(fast, in), eval(full, in)
							if !reflect.DeepEqual(got, want) {
								t.Fatalf("input %v:\ndecision      %v\nfull_decision %v", in, got, want)
							}
							count++
							if got.(map[string]any)["decision"] == contract.Allow {
								allows++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d inputs, %d allowed", count, allows)
	if allows < count/20 || allows > count*9/10 {
		t.Errorf("%d of %d inputs allowed: the grid does not test both sides", allows, count)
	}
}
