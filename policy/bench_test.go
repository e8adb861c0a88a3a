package policy

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/roles"
)

// benchEngine loads the built-ins, the test roles and 50 custom roles with a
// mix of exact names and patterns, as a real installation might have.
func benchEngine(b *testing.B) *Engine {
	b.Helper()
	files := maps.Clone(testRoles)
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
	e, err := New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		b.Fatal(err)
	}
	return e
}

func BenchmarkDecide(b *testing.B) {
	e := benchEngine(b)
	ctx := context.Background()
	cases := append(decideCases[:len(decideCases):len(decideCases)],
		struct {
			name     string
			role     string
			tool     string
			usage    contract.Usage
			want     string
			codes    string
			wantLine string
		}{name: "custom role pattern", role: "custom-07", tool: "mcp__server7__query", want: contract.Allow})
	for _, tt := range cases {
		in := contract.Input{Role: tt.role, Tool: tt.tool, Budget: tt.usage, Session: "s-1", Agent: "bench",
			Arguments: map[string]any{"path": "src/main.go"}}
		if d, _ := e.Decide(ctx, in); d.Decision != tt.want {
			b.Fatalf("%s: %s, want %s", tt.name, d.Decision, tt.want)
		}
		b.Run(tt.want+"/"+tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Decide(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
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

// BenchmarkStatus measures a session's budget as the status entry point
// gives it (the status line), and the levels of two usages in one
// evaluation (what a charge asks to find crossed thresholds), against the
// reference they replaced: the full decision of an exempt tool on the same
// usage.
func BenchmarkStatus(b *testing.B) {
	e := benchEngine(b)
	ctx := context.Background()
	for _, u := range []struct {
		name  string
		usage contract.Usage
	}{{"ok", contract.Usage{Tokens: 1000, Shell: 1}}, {"warning", contract.Usage{Tokens: 170000, Shell: 90}}} {
		b.Run("status/"+u.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Status(ctx, contract.Input{Role: "coder", Budget: u.usage}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("levels-of-2/"+u.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Levels(ctx, RoleUsage{Role: "coder", Usage: u.usage}, RoleUsage{Role: "reviewer", Usage: u.usage}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("exempt-decision/"+u.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Decide(ctx, contract.Input{Role: "coder", Tool: contract.SessionTool, Budget: u.usage}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVisible measures what a tools/list asks of the policy for 40
// tools.
func BenchmarkVisible(b *testing.B) {
	e := benchEngine(b)
	ctx := context.Background()
	tools := []string{"ctx_read", "ctx_edit", "ctx_shell", "ctx_session"}
	for i := range 36 {
		tools = append(tools, fmt.Sprintf("mcp__server%d__tool", i))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Visible(ctx, "reviewer", contract.Named(tools...)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAllowance measures what a charge asks of the policy: how much
// the session may still spend.
func BenchmarkAllowance(b *testing.B) {
	e := benchEngine(b)
	ctx := context.Background()
	in := contract.Input{Role: "coder", Budget: contract.Usage{Tokens: 1000, Shell: 1}, Agent: "bench"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Allowance(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}
