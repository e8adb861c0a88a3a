package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/race"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy/plan"
	"github.com/agentharness/harness/roles"
)

// fastPathRoles add to the test roles what the quick rules must get right:
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
func rawQuery(t testing.TB, e *Engine, query string) rego.PreparedEvalQuery {
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

// The rules that decide common calls quickly (decision.rego) agree with the
// rules one by one (full_decision) on every kind of call: every role, tools
// of each kind, usage around every threshold and between them, arguments
// custom policies look at, and malformed input. Every call the quick rules
// are for takes them.
func TestQuickAgreesWithTheRules(t *testing.T) {
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
			fastPlan, fullPlan := planOf(t, e, Query), planOf(t, e, "data.harness.full_decision")
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
			// Arguments the self-protection rules refuse, for every tool
			// (a shell command and an edit of the harness's own files),
			// with usage clear of every threshold: only the protect rules
			// can refuse these calls of tools the lists admit.
			for _, name := range slices.Sorted(maps.Keys(doc.Roles)) {
				for _, tool := range tools {
					for _, args := range []map[string]any{
						{"command": "cat ~/.lean-ctx/harness.toml"},
						{"path": ".lean-ctx/roles/coder.toml", "content": "x"},
					} {
						v, err := inputValue(contract.Input{Role: name, Tool: tool, Session: "s", Agent: "a",
							Arguments: args}, doc.Roles[name].ShellPolicy)
						if err != nil {
							t.Fatal(err)
						}
						inputs = append(inputs, v)
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
			quick, missed, checked := 0, 0, 0
			keep := race.Sample(stride)
			for i, in := range inputs {
				if i < complete && !keep() {
					continue // a sample under the race detector (see stride)
				}
				got, want := eval(fast, in), eval(full, in)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("input %v:\ndecision      %v\nfull_decision %v", in, got, want)
				}
				// The plans of both give topdown's values.
				if p := planEval(t, fastPlan, in); !reflect.DeepEqual(p, got) {
					t.Fatalf("input %v:\nplan    %v\ntopdown %v", in, p, got)
				}
				if p := planEval(t, fullPlan, in); !reflect.DeepEqual(p, want) {
					t.Fatalf("input %v:\nfull_decision's plan %v\ntopdown              %v", in, p, want)
				}
				// Every complete input the quick rules are for is decided
				// by them (tracing is slow: one input in 5 is checked).
				if i >= complete {
					continue
				}
				if checked++; checked%5 != 1 || !quickFor(doc, in, got.(map[string]any)) {
					continue
				}
				quick++
				if usesFullDecision(t, func(o rego.EvalOption) { eval(fast, in, o) }) {
					missed++
					t.Errorf("not decided quickly: %v: %v", in, got)
				}
			}
			t.Logf("%d inputs; %d checked for the quick rules, %d missed them", len(inputs), quick, missed)
			if quick < 200/stride {
				t.Errorf("only %d inputs checked for the quick rules", quick)
			}
		})
	}
}

// quickFor reports whether the quick rules are for a call (input in, a
// complete one, decided d): valid, of a known role, its agent without a
// budget; an exempt tool only while every dimension is clear; a custom
// policy's messages only on a call the harness itself allows, asking for
// no approval, with no warning; and none of its argument strings suspect (see
// Protect.Suspect) on a call the role's lists admit of a tool that edits
// files or runs shell commands.
func quickFor(doc *compiler.Document, in ast.Value, d map[string]any) bool {
	str := func(key string) string {
		s, _ := in.(ast.Object).Get(ast.StringTerm(key)).Value.(ast.String)
		return string(s)
	}
	role, tool, up, ut := str("role"), str("tool"), str("upstream"), str("upstream_tool")
	r, known := doc.Roles[role]
	if _, budgeted := doc.AgentBudget(str("agent")); !known || budgeted || tool == "" || invalid(d) {
		return false
	}
	codes := func(key string) (harness, custom int) {
		for _, x := range d[key].([]any) {
			if x.(map[string]any)["code"] == "policy" {
				custom++
			} else {
				harness++
			}
		}
		return harness, custom
	}
	reasons, denies := codes("reasons")
	warnings, warns := codes("warnings")
	if up == "" && doc.Config.ExemptTools[tool] {
		return d["signal"] == "OK" && denies+warns == 0
	}
	listsAdmit := !r.Denied.Match(tool) && (ut == "" || !r.Denied.Match(ut)) && r.Allowed.Match(tool)
	asks := r.Ask.Match(tool) || ut != "" && r.Ask.Match(ut)
	if denies+warns > 0 {
		return d["signal"] == "OK" && reasons+warnings == 0 && listsAdmit && !asks
	}
	edits := doc.Config.EditTools.Match(strings.ToLower(tool)) || ut != "" && doc.Config.EditTools.Match(strings.ToLower(ut))
	shell := doc.Config.ShellTools[tool] || doc.Config.ShellTools[ut]
	if listsAdmit && (edits || shell) && doc.Config.Protect.Enabled {
		suspect := regexp.MustCompile(doc.Config.Protect.Suspect.Regex)
		found := false
		ast.WalkTerms(in.(ast.Object).Get(ast.StringTerm("arguments")), func(t *ast.Term) bool {
			if s, ok := t.Value.(ast.String); ok && suspect.MatchString(string(s)) {
				found = true
			}
			return false
		})
		return !found
	}
	return true
}

// invalid reports whether decision d refuses its call for what the call
// or the data is (not what the rules say of it).
func invalid(d map[string]any) bool {
	for _, x := range d["reasons"].([]any) {
		if c := x.(map[string]any)["code"]; c == contract.CodeInvalidInput || c == "unknown_role" {
			return true
		}
	}
	return false
}

// The calls agents make most are decided by the quick rules, without the
// rules one by one: allowed calls of every kind, refusals by the lists,
// the shell policy and the budget, warnings, asks, and custom policies'
// messages.
func TestCommonCallsAreQuick(t *testing.T) {
	files := maps.Clone(testRoles)
	maps.Copy(files, fastPathRoles)
	e, err := New(context.Background(), compiler.Compile(testroles.Set(t, files), compiler.DefaultConfig()),
		compiler.Module{Name: "paths.rego", Source: []byte(fastPathPolicy)})
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	for _, tt := range []struct {
		in    contract.Input
		want  string
		codes string
	}{
		{contract.Input{Role: "coder", Tool: "ctx_read"}, contract.Allow, ""},
		{contract.Input{Role: "coder", Tool: "mcp__github__create_issue", Budget: contract.Usage{Tokens: 1234, Shell: 3, CostMicros: 20017}}, contract.Allow, ""},
		{contract.Input{Role: "ops", Tool: "ctx_shell", Budget: contract.Usage{Shell: 10}}, contract.Allow, ""},
		{contract.Input{Role: "compress", Tool: "ctx_shell", Arguments: map[string]any{"command": "go test ./..."}}, contract.Allow, ""},
		{contract.Input{Role: "reviewer", Tool: "ctx_read", Arguments: map[string]any{"path": "main.go"}}, contract.Allow, ""},
		{contract.Input{Role: "coder", Tool: "ctx_edit", Arguments: map[string]any{"path": "main.go"}}, contract.Allow, ""},
		{contract.Input{Role: "coder", Tool: "ctx_session", Budget: contract.Usage{Tokens: 100}}, contract.Allow, ""},
		{contract.Input{Role: "reviewer", Tool: "ctx_edit"}, contract.Deny, "tool_denied"},
		{contract.Input{Role: "reviewer", Tool: "lean__x", Upstream: "lean", UpstreamTool: "ctx_shell"}, contract.Deny, "tool_denied"},
		{contract.Input{Role: "ctx-only", Tool: "read", Budget: contract.Usage{Tokens: 1000}}, contract.Deny, "tool_not_allowed"},
		{contract.Input{Role: "no-shell", Tool: "ctx_shell"}, contract.Deny, "shell_denied"},
		{contract.Input{Role: "zero-shell", Tool: "ctx_shell"}, contract.Deny, "shell_budget"},
		{contract.Input{Role: "coder", Tool: "ctx_read", Budget: contract.Usage{Tokens: 170001}}, contract.Warn, "budget_warning"},
		{contract.Input{Role: "coder", Tool: "ctx_shell", Budget: contract.Usage{Shell: 99, CostMicros: 4_500_000}}, contract.Warn, "budget_warning,budget_warning"},
		{contract.Input{Role: "coder", Tool: "ctx_read", Budget: contract.Usage{Tokens: 200000}}, contract.Deny, "budget_exhausted"},
		{contract.Input{Role: "coder", Tool: "ctx_shell", Budget: contract.Usage{Shell: 100}}, contract.Deny, "budget_exhausted,shell_budget"},
		{contract.Input{Role: "asks", Tool: "ctx_shell"}, contract.Ask, "approval_required"},
		{contract.Input{Role: "coder", Tool: "ctx_read", Arguments: map[string]any{"path": "big"}}, contract.Warn, "policy"},
		{contract.Input{Role: "coder", Tool: "ctx_read", Arguments: map[string]any{"path": "secret"}}, contract.Deny, "policy"},
		{contract.Input{Role: "coder", Tool: "ctx_session", Budget: contract.Usage{Tokens: 200000}}, contract.Warn, "budget_warning"},
		{contract.Input{Role: "coder", Tool: "ctx_session", Budget: contract.Usage{Tokens: 170001, Shell: 100}}, contract.Warn, "budget_warning,budget_warning"},
		{contract.Input{Role: "nobody", Tool: "ctx_read"}, contract.Deny, "unknown_role"},
		{contract.Input{Role: "nobody", Tool: "ctx_shell", Budget: contract.Usage{Shell: 3}}, contract.Deny, "unknown_role,budget_warning"},
		{contract.Input{Role: "coder", Tool: "ctx_read", Budget: contract.Usage{Tokens: -1}}, contract.Deny, "invalid_input"},
		{contract.Input{Role: "coder", Tool: "ctx_shell", Budget: contract.Usage{Shell: -1, CostMicros: -2}}, contract.Deny, "invalid_input,invalid_input"},
	} {
		var d contract.Decision
		full := usesFullDecision(t, func(o rego.EvalOption) {
			var err error
			if d, err = e.decide(context.Background(), tt.in, o); err != nil {
				t.Fatal(err)
			}
		})
		var codes []string
		for _, r := range append(d.Reasons, d.Warnings...) {
			codes = append(codes, r.Code)
		}
		if full || d.Decision != tt.want || strings.Join(codes, ",") != tt.codes {
			t.Errorf("%+v: %s %v, the rules one by one evaluated: %v; want %s %s, quickly", tt.in, d.Decision, codes, full, tt.want, tt.codes)
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

// setUsage sets u's usage of dimension dim ("tokens", "shell", "cost").
func setUsage(u *contract.Usage, dim string, n int64) {
	switch dim {
	case "tokens":
		u.Tokens = n
	case "shell":
		u.Shell = n
	default:
		u.CostMicros = n
	}
}

// stride is how sparsely the differential grids sample their inputs: one
// in 16 under the race detector, which checks the engine's concurrency and
// not its logic (see race.Sample), all of them without it (make
// test-grids).
var stride = race.Stride(16)

// usages are the usages around every threshold of a role, and between
// them (where a percentage leaves a remainder).
func usages(r compiler.RoleDoc) []contract.Usage {
	out := []contract.Usage{{}, {Tokens: -1}, {Tokens: r.Thresholds["tokens"].WarnAt/3 + 1, Shell: r.Thresholds["shell"].WarnAt / 2, CostMicros: r.Thresholds["cost"].WarnAt/7 + 3}}
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
			setUsage(&u, dim, n)
			out = append(out, u)
		}
	}
	return out
}

// The quick rules agree with the rules one by one where a call's tool comes
// from an upstream, its agent has a budget across sessions, its arguments
// touch the harness's own files or are malformed: every such input of a
// grid over roles, tool origins, agent usage around each threshold and
// arguments.
func TestQuickAgreesOnOriginsAgentsAndProtection(t *testing.T) {
	files := maps.Clone(testRoles)
	maps.Copy(files, fastPathRoles)
	cfg := compiler.DefaultConfig()
	n := func(v int64) *int64 { return &v }
	cfg.AgentBudgets = map[string]compiler.AgentBudget{
		"budgeted":        {Period: "day", Tokens: n(1000), Shell: n(3), CostMicros: n(1_000_000), WarnPercent: 80, BlockPercent: 100},
		"shell-only":      {Period: "total", Shell: n(2), WarnPercent: 50, BlockPercent: 100},
		compiler.AnyAgent: {Period: "week", CostMicros: n(500), WarnPercent: 90, BlockPercent: 255},
	}
	cfg.Protect = compiler.Protect{Home: "/home/dev", Paths: []string{"/home/dev/.lean-ctx", "/home/dev/ledgers/main.db", "/srv/state"}}
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
		map[string]any{"command": "rm -rf /srv/state"}, map[string]any{"command": "cp x $HOME/ledgers/main.db"}, "rm -rf /x",
	}
	// main.go as the file system resolves it: not at all, into the
	// harness's files, elsewhere, unresolved.
	resolveds := []map[string][]string{nil, {"main.go": {"/home/dev/.lean-ctx/harness.toml"}}, {"main.go": {"/work/main.go", "/srv/main.go"}}, {"main.go": nil}}
	roles := []string{"coder", "reviewer", "ops", "no-shell", "denies-some", "asks"}
	count, allows := 0, 0
	keep := race.Sample(stride)
	for _, role := range roles {
		for _, tool := range origins {
			for agent, list := range agentUsages {
				for _, au := range list {
					for _, args := range arguments {
						for _, u := range []contract.Usage{[]contract.Usage{{}, {Tokens: 199_999}, {Shell: 99}}[count%3]} {
							if !keep() {
								continue // a sample under the race detector (see stride)
							}
							in, err := inputValue(contract.Input{Role: role, Tool: tool.Name, Upstream: tool.Upstream, UpstreamTool: tool.UpstreamTool,
								Arguments: args, Budget: u, AgentBudget: au, Session: "s", Agent: agent, Resolved: resolveds[count%len(resolveds)]}, doc.Roles[role].ShellPolicy)
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
	if allows < count/40 || allows > count*9/10 {
		t.Errorf("%d of %d inputs allowed: the grid does not test both sides", allows, count)
	}
}

// FuzzQuickAgreesWithTheRules holds decision equal to full_decision on
// arbitrary calls: any role, tool and origin, arguments of any shape, usage
// and agent usage of any type (whole, fractional, negative, strings,
// missing), agents with and without a budget.
func FuzzQuickAgreesWithTheRules(f *testing.F) {
	t := &testing.T{}
	doc := cacheDoc(t)
	doc.Config.Protect = compiler.Compile(testroles.Set(t, testRoles), compiler.Config{
		Protect: compiler.Protect{Home: "/home/dev", Paths: []string{"/home/dev/.lean-ctx", "/home/dev/ledgers/main.db", "/srv/state"}},
	}).Config.Protect
	e, err := New(context.Background(), doc, compiler.Module{Name: "paths.rego", Source: []byte(fastPathPolicy)})
	if err != nil {
		f.Fatal(err)
	}
	quick, full := rawQuery(t, e, Query), rawQuery(t, e, "data.harness.full_decision")
	roles := append(slices.Sorted(maps.Keys(doc.Roles)), "nobody")
	agents := []string{"none", "budgeted", "shell-only"}
	f.Add(uint8(0), "ctx_read", "", "", "main.go", uint8(0), int64(10), int64(0), int64(5), uint8(0), uint8(0), int64(0), uint8(0))
	f.Add(uint8(3), "ctx_shell", "lean", "ctx_shell", "rm -rf ~/ledgers", uint8(1), int64(99), int64(2), int64(100), uint8(5), uint8(1), int64(7), uint8(1))
	f.Add(uint8(7), "fs__write_file", "fs", "write_file", "~/ledgers/main.db", uint8(2), int64(-1), int64(1<<40), int64(0), uint8(17), uint8(2), int64(3), uint8(2))
	f.Add(uint8(5), "ctx_session", "", "", "secret", uint8(0), int64(199999), int64(0), int64(0), uint8(0), uint8(0), int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, role uint8, tool, up, ut, arg string, argShape uint8, tokens, shell, cost int64, numShape, agent uint8, agentTokens int64, agentShape uint8) {
		in := ast.NewObject(
			ast.Item(ast.StringTerm("tool"), ast.StringTerm(tool)),
			ast.Item(ast.StringTerm("upstream"), ast.StringTerm(up)),
			ast.Item(ast.StringTerm("upstream_tool"), ast.StringTerm(ut)),
			ast.Item(ast.StringTerm("agent"), ast.StringTerm(agents[int(agent)%len(agents)])),
			ast.Item(ast.StringTerm("session"), ast.StringTerm("s")),
		)
		if role == 255 {
			in.Insert(ast.StringTerm("role"), ast.IntNumberTerm(7))
		} else {
			in.Insert(ast.StringTerm("role"), ast.StringTerm(roles[int(role)%len(roles)]))
		}
		switch argShape % 7 {
		case 0:
			in.Insert(ast.StringTerm("arguments"), ast.ObjectTerm(ast.Item(ast.StringTerm("path"), ast.StringTerm(arg))))
		case 1:
			in.Insert(ast.StringTerm("arguments"), ast.ObjectTerm(ast.Item(ast.StringTerm("command"), ast.StringTerm(arg))))
		case 2:
			in.Insert(ast.StringTerm("arguments"), ast.ObjectTerm(ast.Item(ast.StringTerm("edits"), ast.ArrayTerm(
				ast.ObjectTerm(ast.Item(ast.StringTerm("file"), ast.StringTerm(arg)))))))
		case 3:
			in.Insert(ast.StringTerm("arguments"), ast.StringTerm(arg))
		case 4:
		case 5:
			in.Insert(ast.StringTerm("arguments"), ast.NullTerm())
		case 6:
			in.Insert(ast.StringTerm("arguments"), ast.ObjectTerm(ast.Item(ast.StringTerm("paths"), ast.ArrayTerm(ast.StringTerm(arg), ast.StringTerm("x")))))
		}
		// Each count whole, fractional, a string or missing (two bits each).
		number := func(n int64, shape uint8) *ast.Term {
			switch shape % 4 {
			case 1:
				return ast.NumberTerm(json.Number(fmt.Sprintf("%d.5", n)))
			case 2:
				return ast.StringTerm(fmt.Sprint(n))
			case 3:
				return nil
			}
			return ast.IntNumberTerm(int(n))
		}
		budget := ast.NewObject()
		for i, kv := range []struct {
			key string
			n   int64
		}{{"tokens", tokens}, {"shell", shell}, {"cost_micros", cost}} {
			if v := number(kv.n, numShape>>(2*i)); v != nil {
				budget.Insert(ast.StringTerm(kv.key), v)
			}
		}
		in.Insert(ast.StringTerm("budget"), ast.NewTerm(budget))
		switch agentShape % 3 {
		case 1:
			in.Insert(ast.StringTerm("agent_budget"), usageTerm(contract.Usage{Tokens: agentTokens, Shell: agentTokens % 4}))
		case 2:
			in.Insert(ast.StringTerm("agent_budget"), ast.ObjectTerm(ast.Item(ast.StringTerm("tokens"), number(agentTokens, 1))))
		}
		value := func(pq rego.PreparedEvalQuery) (any, error) {
			rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(in))
			if err != nil || len(rs) != 1 {
				return nil, fmt.Errorf("%v (%d results)", err, len(rs))
			}
			return rs[0].Expressions[0].Value, nil
		}
		got, errGot := value(quick)
		want, errWant := value(full)
		if (errGot == nil) != (errWant == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("input %v:\ndecision      %v %v\nfull_decision %v %v", in, got, errGot, want, errWant)
		}
	})
}

// The allowance worked out quickly agrees with full_allowance for every
// role, usage around every threshold, agents with and without a budget,
// and malformed usage.
func TestQuickAllowanceAgrees(t *testing.T) {
	doc := cacheDoc(t)
	e, err := New(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	quick, full := rawQuery(t, e, AllowanceQuery), rawQuery(t, e, "data.harness.full_allowance")
	var inputs []ast.Value
	for _, name := range append(slices.Sorted(maps.Keys(doc.Roles)), "nobody") {
		for _, u := range usages(doc.Roles[name]) {
			for _, agent := range []string{"none", "budgeted", "shell-only"} {
				for _, au := range []*contract.Usage{nil, {}, {Tokens: 999, Shell: 2, CostMicros: 1_000_001}} {
					inputs = append(inputs, statusValue(contract.Input{Role: name, Budget: u, Agent: agent, AgentBudget: au}))
				}
			}
		}
	}
	for _, raw := range []string{
		`{"role": "coder"}`,
		`{"role": "coder", "budget": {"tokens": 1.5, "shell": 0, "cost_micros": 0}}`,
		`{"role": "coder", "budget": {"tokens": 5, "shell": "1", "cost_micros": 0}}`,
		`{"role": 7, "budget": {"tokens": 0, "shell": 0, "cost_micros": 0}}`,
	} {
		inputs = append(inputs, ast.MustParseTerm(raw).Value)
	}
	for _, in := range inputs {
		got, err1 := quick.Eval(context.Background(), rego.EvalParsedInput(in))
		want, err2 := full.Eval(context.Background(), rego.EvalParsedInput(in))
		if err1 != nil || err2 != nil || len(got) != 1 || len(want) != 1 || !reflect.DeepEqual(got[0].Expressions[0].Value, want[0].Expressions[0].Value) {
			t.Fatalf("input %v:\nallowance      %v %v\nfull_allowance %v %v", in, got, err1, want, err2)
		}
	}
	t.Logf("%d inputs", len(inputs))
}

// planOf is the plan of query q on e's generation.
func planOf(t testing.TB, e *Engine, q string) *plan.Program {
	t.Helper()
	l := e.cur.Load()
	l.prepMu.Lock()
	defer l.prepMu.Unlock()
	p, err := plan.Compile(context.Background(), l.compiler, l.store, q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// planEval evaluates p on in, as JSON values (as topdown's results are
// read here).
func planEval(t testing.TB, p *plan.Program, in ast.Value) any {
	t.Helper()
	v, err := p.Eval(context.Background(), in, plan.Options{})
	if err != nil || v == nil {
		t.Fatalf("%v: %v %v", in, v, err)
	}
	x, err := ast.JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
