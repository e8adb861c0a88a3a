package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy/plan"
	"github.com/agentharness/harness/roles"
)

// benchEngine loads the built-ins, the test roles, a role that asks, and 50
// custom roles with a mix of exact names and patterns, as a real
// installation might have, with one custom policy (benchPolicy).
func benchEngine(b testing.TB) *Engine {
	b.Helper()
	files := maps.Clone(testRoles)
	files["asks"] = fastPathRoles["asks"]
	for i := range 50 {
		files[fmt.Sprintf("custom-%02d", i)] = fmt.Sprintf(`[role]
inherits = %q
[tools]
allowed = ["ctx_read", "ctx_search", "ctx_tree", "tool_%d_*", "mcp__server%d__*", "*_view"]
denied = ["ctx_edit", "danger_%d"]
[limits]
max_context_tokens = %d
`, []string{"coder", "reviewer", "debugger"}[i%3], i, i, i, 100000+i)
	}
	set := testroles.Set(b, files)
	e, err := New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()),
		compiler.Module{Name: "bench.rego", Source: []byte(benchPolicy)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.cur.Load().waitPlan(Query); err != nil {
		b.Fatal(err)
	}
	return e
}

// benchPolicy is a custom policy as real ones are: a deny on shell
// commands (a regex) and a warning on arguments.
const benchPolicy = `package harness.custom.bench

deny contains "no force pushes" if {
	data.harness.config.shell_tools[input.tool]
	regex.match(` + "`" + `\bgit\s+push\s+.*--force\b` + "`" + `, input.arguments.command)
}

warn contains "a generated file" if {
	input.tool == "ctx_read"
	endswith(input.arguments.path, ".pb.go")
}
`

// benchCase is one call of BenchmarkDecide.
type benchCase struct {
	name, want string
	in         contract.Input
}

// benchCases are decideCases, and calls the custom policy and the ask list
// decide.
func benchCases() []benchCase {
	var out []benchCase
	for _, tt := range decideCases {
		out = append(out, benchCase{tt.name, tt.want, contract.Input{Role: tt.role, Tool: tt.tool, Budget: tt.usage,
			Session: "s-1", Agent: "bench", Arguments: map[string]any{"path": "src/main.go"}}})
	}
	return append(out,
		benchCase{"custom role pattern", contract.Allow, contract.Input{Role: "custom-07", Tool: "mcp__server7__query",
			Session: "s-1", Agent: "bench", Arguments: map[string]any{"path": "src/main.go"}}},
		benchCase{"asks shell", contract.Ask, contract.Input{Role: "asks", Tool: "ctx_shell",
			Session: "s-1", Agent: "bench", Arguments: map[string]any{"command": "go test ./..."}}},
		benchCase{"custom policy warns", contract.Warn, contract.Input{Role: "coder", Tool: "ctx_read",
			Session: "s-1", Agent: "bench", Arguments: map[string]any{"path": "api/api.pb.go"}}},
		benchCase{"custom policy denies", contract.Deny, contract.Input{Role: "coder", Tool: "ctx_shell",
			Session: "s-1", Agent: "bench", Arguments: map[string]any{"command": "git push origin main --force"}}},
	)
}

// BenchmarkDecide measures one decision of each kind. uncached evaluates
// every call (from the decision's plan, package plan); topdown evaluates
// it with OPA's topdown evaluator instead, the reference in the same run;
// cached makes calls that differ only in their usage, within the same
// budget band, as a session's calls do (only where the call's usage is in
// the band the cache keeps: elsewhere a call is evaluated).
// p50-ns is the median of the calls.
func BenchmarkDecide(b *testing.B) {
	e := benchEngine(b)
	ctx := context.Background()
	for _, tt := range benchCases() {
		if d, _ := e.Decide(ctx, tt.in); d.Decision != tt.want {
			b.Fatalf("%s: %s, want %s: %+v", tt.name, d.Decision, tt.want, d.Reasons)
		}
		b.Run("uncached/"+tt.want+"/"+tt.name, func(b *testing.B) {
			p50(b, func(int) {
				if _, err := e.decide(ctx, tt.in); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(float64(statements(b, e, tt.in)), "statements")
		})
		b.Run("topdown/"+tt.want+"/"+tt.name, func(b *testing.B) {
			p50(b, func(int) {
				if _, err := e.decideTopdown(ctx, tt.in); err != nil {
					b.Fatal(err)
				}
			})
		})
		l := e.cur.Load()
		if _, ok := l.cache.key(l.doc, tt.in); !ok {
			continue
		}
		b.Run("cached/"+tt.want+"/"+tt.name, func(b *testing.B) {
			p50(b, func(i int) {
				in := tt.in
				in.Budget.Tokens += int64(i % 50)
				if _, err := e.Decide(ctx, in); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// statements is how many statements of the decision's plan deciding in
// runs, once the plan has run before: the evaluation's work, which unlike
// its time is the same on every run and every machine.
func statements(tb testing.TB, e *Engine, in contract.Input) int64 {
	tb.Helper()
	l := e.cur.Load()
	p, err := l.waitPlan(Query)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := inputValue(in, l.shellPolicy(in.Role))
	if err != nil {
		tb.Fatal(err)
	}
	// Counted on the second evaluation: the first works out and keeps
	// what the plan keeps across evaluations (the rules of the data
	// alone), as a gateway's or daemon's first call does once.
	var n int64
	for _, steps := range []*int64{nil, &n} {
		if _, err := p.Eval(context.Background(), v, plan.Options{Values: l.values, Steps: steps}); err != nil {
			tb.Fatal(err)
		}
	}
	return n
}

// p50 runs f in b's loop, reporting allocations and the median duration of
// a call (p50-ns). The calls of the first 100 ms are not counted: a
// process's first calls pay for growing its heap, the regular expressions
// and OPA's caches, which a long-running gateway or daemon pays once.
func p50(b *testing.B, f func(i int)) {
	for i, start := 0, time.Now(); time.Since(start) < 100*time.Millisecond; i++ {
		f(i)
	}
	b.ReportAllocs()
	var ds []time.Duration
	for i := 0; b.Loop(); i++ {
		t := time.Now()
		f(i)
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkDecideParallel measures decisions from both cores at once, as a
// gateway serving several calls does.
func BenchmarkDecideParallel(b *testing.B) {
	e := benchEngine(b)
	ctx := context.Background()
	in := contract.Input{Role: "reviewer", Tool: "ctx_read", Budget: contract.Usage{Tokens: 1000}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Decide(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecideCustom measures a decision with 0, 1 and 10 custom
// policies loaded, each with a deny rule on shell commands (a regex) and a
// warn rule on arguments, as real ones have.
func BenchmarkDecideCustom(b *testing.B) {
	ctx := context.Background()
	set, err := roles.LoadDefs()
	if err != nil {
		b.Fatal(err)
	}
	doc := compiler.Compile(set, compiler.DefaultConfig())
	for _, n := range []int{0, 1, 10} {
		var mods []compiler.Module
		for i := range n {
			src := fmt.Sprintf(`package harness.custom.p%d

deny contains msg if {
	data.harness.config.shell_tools[input.tool]
	regex.match(`+"`"+`\bforbidden%d\b`+"`"+`, input.arguments.command)
	msg := "forbidden %d"
}

warn contains "big" if {
	input.tool == "ctx_read"
	input.arguments.lines > %d
}
`, i, i, i, 1000+i)
			mods = append(mods, compiler.Module{Name: fmt.Sprintf("p%d.rego", i), Source: []byte(src)})
		}
		e, err := New(ctx, doc, mods...)
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range []contract.Input{
			{Role: "coder", Tool: "ctx_shell", Arguments: map[string]any{"command": "go test ./..."}},
			{Role: "coder", Tool: "ctx_read", Arguments: map[string]any{"path": "main.go", "lines": 200}},
		} {
			b.Run(fmt.Sprintf("policies=%d/%s", n, in.Tool), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if d, err := e.Decide(ctx, in); err != nil || d.Decision != contract.Allow {
						b.Fatalf("%+v %v", d, err)
					}
				}
			})
		}
	}
}

// viewEngines are the engines of the benchmarks of the entry points
// beside the decision: "plan" evaluates each from its plan, "topdown" with
// OPA's topdown evaluator (the reference, as before the plans), in one
// process.
func viewEngines(b *testing.B) []struct {
	name string
	e    *Engine
} {
	planned, planless := benchEngine(b), benchEngine(b)
	for _, q := range viewEntryPoints {
		if _, err := planned.cur.Load().waitPlan(q); err != nil {
			b.Fatal(err)
		}
		qp := planless.cur.Load().planOf(q)
		qp.once.Do(func() {
			qp.done = make(chan struct{})
			close(qp.done)
			qp.err = errors.New("the reference evaluates with topdown")
		})
	}
	return []struct {
		name string
		e    *Engine
	}{{"plan", planned}, {"topdown", planless}}
}

// BenchmarkStatus measures a session's budget as the status entry point
// gives it (the status line), and the levels of two usages in one
// evaluation (what a charge asks to find crossed thresholds), beside the
// full decision of an exempt tool on the same usage.
func BenchmarkStatus(b *testing.B) {
	ctx := context.Background()
	for _, x := range viewEngines(b) {
		e := x.e
		for _, u := range []struct {
			name  string
			usage contract.Usage
		}{{"ok", contract.Usage{Tokens: 1000, Shell: 1}}, {"warning", contract.Usage{Tokens: 170000, Shell: 90}}} {
			b.Run(x.name+"/status/"+u.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Status(ctx, contract.Input{Role: "coder", Budget: u.usage}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(x.name+"/levels-of-2/"+u.name, func(b *testing.B) {
				e.SetCaching(false)
				defer e.SetCaching(true)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Levels(ctx, RoleUsage{Role: "coder", Usage: u.usage}, RoleUsage{Role: "reviewer", Usage: u.usage}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	for _, u := range []contract.Usage{{Tokens: 1000, Shell: 1}, {Tokens: 170000, Shell: 90}} {
		e := benchEngine(b)
		b.Run(fmt.Sprintf("exempt-decision/%d-tokens", u.Tokens), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Decide(ctx, contract.Input{Role: "coder", Tool: contract.SessionTool, Budget: u}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVisible measures what a tools/list asks of the policy for 40
// tools.
func BenchmarkVisible(b *testing.B) {
	ctx := context.Background()
	tools := []string{"ctx_read", "ctx_edit", "ctx_shell", "ctx_session"}
	for i := range 36 {
		tools = append(tools, fmt.Sprintf("mcp__server%d__tool", i))
	}
	for _, x := range viewEngines(b) {
		b.Run(x.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := x.e.Visible(ctx, "reviewer", contract.Named(tools...)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAllowance measures what a charge asks of the policy: how much
// the session may still spend.
func BenchmarkAllowance(b *testing.B) {
	ctx := context.Background()
	in := contract.Input{Role: "coder", Budget: contract.Usage{Tokens: 1000, Shell: 1}, Agent: "bench"}
	for _, x := range viewEngines(b) {
		b.Run(x.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := x.e.Allowance(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
