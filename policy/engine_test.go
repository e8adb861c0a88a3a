package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/roles"
)

// testRoles are the built-ins plus the custom roles the cases need.
var testRoles = map[string]string{
	// Inherits reviewer and sets only [limits]: keeps reviewer's tools.
	"tight-reviewer": "[role]\ninherits = \"reviewer\"\n[limits]\nmax_context_tokens = 1000\n",
	"ctx-only":       "[tools]\nallowed = [\"ctx_*\"]\n",
	"deny-all":       "[tools]\ndenied = [\"*\"]\n",
	"no-shell":       "[role]\nshell_policy = \"deny\"\n",
	"zero-shell":     "[limits]\nmax_shell_invocations = 0\n",
	"never-block":    "[limits]\nmax_context_tokens = 100\nmax_shell_invocations = 1\nblock_at_percent = 255\n",
	"middle":         "[tools]\nallowed = [\"mcp__*__read\", \"a?b*\"]\n",
}

func testSet(t testing.TB) *roles.Set { return testroles.Set(t, testRoles) }

func testEngine(t testing.TB) *Engine {
	t.Helper()
	e, err := New(context.Background(), compiler.Compile(testSet(t), compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	return e
}

// relaxed gives e a deadline far beyond the default: tests that are not
// about the deadline run on a busy machine, where an evaluation may wait
// for a core longer than 250 ms.
func relaxed(e *Engine) *Engine {
	e.SetBounds(Bounds{Timeout: time.Minute})
	return e
}

// decideCases is shared by the test and the benchmark.
var decideCases = []struct {
	name     string
	role     string
	tool     string
	usage    contract.Usage
	want     string
	codes    string // reason codes (deny) or warning codes, comma-separated
	wantLine string // status line, when checked
}{
	{name: "coder edits", role: "coder", tool: "ctx_edit", want: contract.Allow},
	{name: "coder any tool", role: "coder", tool: "mcp__github__create_issue", want: contract.Allow},
	{name: "reviewer reads", role: "reviewer", tool: "ctx_read", want: contract.Allow},
	{name: "reviewer edit", role: "reviewer", tool: "ctx_edit", want: contract.Deny, codes: "tool_denied"},
	{name: "reviewer shell", role: "reviewer", tool: "ctx_shell", want: contract.Deny, codes: "tool_denied"},
	{name: "reviewer execute", role: "reviewer", tool: "ctx_execute", want: contract.Deny, codes: "tool_denied"},
	{name: "ops shell", role: "ops", tool: "ctx_shell", want: contract.Allow},
	{name: "ops edit", role: "ops", tool: "ctx_edit", want: contract.Deny, codes: "tool_denied"},
	{name: "admin anything", role: "admin", tool: "ctx_edit", want: contract.Allow},
	{name: "inherited tools kept", role: "tight-reviewer", tool: "ctx_edit", want: contract.Deny, codes: "tool_denied"},
	{name: "inherited reads", role: "tight-reviewer", tool: "ctx_read", want: contract.Allow},
	{name: "inherited limits", role: "tight-reviewer", tool: "ctx_read", usage: contract.Usage{Tokens: 1000}, want: contract.Deny, codes: "budget_exhausted"},
	{name: "prefix matches", role: "ctx-only", tool: "ctx_read", want: contract.Allow},
	{name: "prefix does not match", role: "ctx-only", tool: "read", want: contract.Deny, codes: "tool_not_allowed"},
	{name: "middle star", role: "middle", tool: "mcp__fs__read", want: contract.Allow},
	{name: "glob characters are literal", role: "middle", tool: "axb", want: contract.Deny, codes: "tool_not_allowed"},
	{name: "question mark literal", role: "middle", tool: "a?bcd", want: contract.Allow},
	{name: "deny star", role: "deny-all", tool: "ctx_read", want: contract.Deny, codes: "tool_denied"},
	{name: "deny star exempt", role: "deny-all", tool: "ctx_session", want: contract.Allow},
	{name: "shell policy deny", role: "no-shell", tool: "ctx_shell", want: contract.Deny, codes: "shell_denied"},
	{name: "tokens warning", role: "coder", tool: "ctx_read", usage: contract.Usage{Tokens: 170000}, want: contract.Warn, codes: "budget_warning"},
	{name: "tokens exhausted", role: "coder", tool: "ctx_read", usage: contract.Usage{Tokens: 200000}, want: contract.Deny, codes: "budget_exhausted",
		wantLine: "Budget[coder]: tokens 200000/200000 (100%) | shell 0/100 (0%) | cost $0.00/$5.00 (0%) → EXHAUSTED"},
	{name: "session when exhausted", role: "coder", tool: "ctx_session", usage: contract.Usage{Tokens: 200000}, want: contract.Warn, codes: "budget_warning"},
	{name: "shell 99 of 100", role: "coder", tool: "ctx_shell", usage: contract.Usage{Shell: 99}, want: contract.Warn, codes: "budget_warning"},
	{name: "shell 100 of 100", role: "coder", tool: "ctx_shell", usage: contract.Usage{Shell: 100}, want: contract.Deny, codes: "budget_exhausted,shell_budget"},
	{name: "zero shell refuses shell", role: "zero-shell", tool: "ctx_shell", want: contract.Deny, codes: "shell_budget"},
	{name: "zero shell reads", role: "zero-shell", tool: "ctx_read", want: contract.Allow},
	{name: "255 never blocks", role: "never-block", tool: "ctx_shell", usage: contract.Usage{Tokens: 500, Shell: 9}, want: contract.Warn, codes: "budget_warning,budget_warning"},
	{name: "seeds status line", role: "coder", tool: "ctx_read", usage: contract.Usage{Tokens: 50000, Shell: 5, CostMicros: 500000}, want: contract.Allow,
		wantLine: "Budget[coder]: tokens 50000/200000 (25%) | shell 5/100 (5%) | cost $0.50/$5.00 (10%) → OK"},
	{name: "unknown role", role: "nobody", tool: "ctx_read", want: contract.Deny, codes: "unknown_role"},
	{name: "negative usage", role: "coder", tool: "ctx_read", usage: contract.Usage{Tokens: -1}, want: contract.Deny, codes: "invalid_input"},
}

func TestDecide(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	for _, tt := range decideCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := e.Decide(context.Background(), contract.Input{Role: tt.role, Tool: tt.tool, Budget: tt.usage, Session: "s", Agent: "a"})
			if err != nil {
				t.Fatal(err)
			}
			if d.Decision != tt.want || d.Allowed != (tt.want != contract.Deny) {
				t.Fatalf("decision %s (allowed %v), want %s: %+v", d.Decision, d.Allowed, tt.want, d)
			}
			list := d.Warnings
			if d.Decision == contract.Deny {
				list = d.Reasons
			}
			var codes []string
			for _, r := range list {
				codes = append(codes, r.Code)
			}
			if got := strings.Join(codes, ","); got != tt.codes {
				t.Errorf("codes %q, want %q (%+v)", got, tt.codes, list)
			}
			if tt.wantLine != "" && d.StatusLine() != tt.wantLine {
				t.Errorf("status line\n got %s\nwant %s", d.StatusLine(), tt.wantLine)
			}
		})
	}
}

func TestRegoSuite(t *testing.T) {
	t.Parallel()
	set, err := roles.Load(roles.Dirs{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := compiler.NewBundle(compiler.Compile(set, compiler.DefaultConfig()), append(Modules(), TestModules()...))
	if err != nil {
		t.Fatal(err)
	}
	run, err := RunTests(context.Background(), b, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Results) < 30 {
		t.Fatalf("only %d Rego tests ran", len(run.Results))
	}
	for _, r := range run.Results {
		if r.Fail || r.Error != nil || r.Skip {
			t.Errorf("%s.%s: fail=%v skip=%v error=%v", r.Package, r.Name, r.Fail, r.Skip, r.Error)
		}
	}
}

// The compiler's matcher (with which it works out which roles are within
// which) must agree with the policy's matching.
func TestMatcherAgreesWithPolicy(t *testing.T) {
	t.Parallel()
	patterns := []string{"ctx_*", "*_read", "mcp__*__list*", "a*b*a", "x?y*", "[ab]*", "exact", "*"}
	tools := []string{"ctx_read", "ctx_", "read", "my_read", "mcp__gh__list", "mcp__gh__listing", "mcp____list", "aba", "ab", "abxba", "x?yz", "xayz", "[ab]c", "ac", "exact", "exactly", ""}
	ctx := context.Background()
	for _, p := range patterns {
		set := testroles.Set(t, map[string]string{"p": fmt.Sprintf("[tools]\nallowed = [%q]\n", p)})
		doc := compiler.Compile(set, compiler.Config{})
		e, err := New(ctx, doc)
		if err != nil {
			t.Fatal(err)
		}
		relaxed(e)
		for _, tool := range tools {
			if tool == "" {
				continue
			}
			dec, _ := e.Decide(ctx, contract.Input{Role: "p", Tool: tool})
			if got, want := doc.Roles["p"].Allowed.Match(tool), dec.Allowed; got != want {
				t.Errorf("pattern %q, tool %q: Go matcher %v, policy %v", p, tool, got, want)
			}
		}
	}
}

func TestReloadWhileDeciding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testEngine(t)
	strict := compiler.Compile(testSet(t), compiler.DefaultConfig())
	loose := compiler.Compile(testSet(t), compiler.DefaultConfig())
	// In the loose generation, reviewer may edit.
	r := loose.Roles["reviewer"]
	r.Denied = compiler.NewMatcher(nil)
	r.Allowed = compiler.NewMatcher([]string{"*"})
	loose.Roles["reviewer"] = r

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, err := e.Decide(ctx, contract.Input{Role: "reviewer", Tool: "ctx_edit"})
				if err != nil || (d.Decision != contract.Allow && d.Decision != contract.Deny) || (d.Decision == contract.Deny && d.Reasons[0].Code != contract.CodeToolDenied) {
					t.Errorf("torn decision during reload: %+v %v", d, err)
					return
				}
			}
		})
	}
	for i := range 8 {
		doc := strict
		if i%2 == 0 {
			doc = loose
		}
		if err := e.Reload(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if err := e.Reload(ctx, loose); err != nil {
		t.Fatal(err)
	}
	if d, _ := e.Decide(ctx, contract.Input{Role: "reviewer", Tool: "ctx_edit"}); d.Decision != contract.Allow {
		t.Errorf("after reload: %+v", d)
	}
}

func TestStatusLineAndMoney(t *testing.T) {
	t.Parallel()
	for micros, want := range map[int64]string{0: "$0.00", 500000: "$0.50", 4_999_999: "$4.99", 50_000_000: "$50.00", 1: "$0.00"} {
		if got := contract.FormatUSD(micros); got != want {
			t.Errorf("FormatUSD(%d) = %s, want %s", micros, got, want)
		}
	}
	for in, want := range map[string]int64{"0.50": 500000, "$5": 5_000_000, "0.000001": 1, ".5": 500000, "12": 12_000_000} {
		if got, err := contract.ParseUSD(in); err != nil || got != want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1.0000001", "1e3", "abc", "1.2.3", "."} {
		if _, err := contract.ParseUSD(bad); err == nil {
			t.Errorf("ParseUSD(%q) accepted", bad)
		}
	}
}

func TestEvaluationProblemsDeny(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc := compiler.Compile(testSet(t), compiler.DefaultConfig())
	tests := []struct {
		name, module, want string
	}{
		{"builtin error", "package harness\ndecision := {\"x\": 1 / count(input.arguments)}\n", "policy evaluation failed: "},
		{"conflict", "package harness\ndecision := 1 if input.tool\ndecision := 2 if input.tool\n", "policy evaluation failed: "},
		{"undefined", "package harness\ndecision := 1 if false\n", "policy evaluation failed: data.harness.decision is undefined"},
		{"malformed", "package harness\ndecision := {\"decision\": \"allow\"}\n", "policy evaluation failed: malformed decision: "},
		{"allow that says not allowed", `package harness
decision := {"decision": "allow", "allowed": false, "role": "", "tool": "", "shell_policy": "", "shell_tool": false, "compress_output": false, "agent_budget": null,
	"reasons": [], "warnings": [], "signal": "OK", "budget": {
	"tokens": {"used": 0, "limit": 0, "percent": 0, "level": "OK"},
	"shell": {"used": 0, "limit": 0, "percent": 0, "level": "OK"},
	"cost": {"used": 0, "limit": 0, "percent": 0, "level": "OK"}}}
`, "policy evaluation failed: malformed decision: allowed=false contradicts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := prepare(ctx, doc, []compiler.Module{{Name: "broken.rego", Source: []byte(tt.module)}})
			if err != nil {
				t.Fatal(err)
			}
			e := &Engine{}
			e.cur.Store(l)
			d, err := e.Decide(ctx, contract.Input{Role: "coder", Tool: "ctx_read"})
			if err != nil {
				t.Fatal(err)
			}
			if d.Decision != contract.Deny || d.Allowed || len(d.Reasons) != 1 || d.Reasons[0].Code != contract.CodeEvalError || !strings.HasPrefix(d.Reasons[0].Message, tt.want) {
				t.Errorf("got %+v, want a deny with %q", d, tt.want)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		e := testEngine(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		d, err := e.Decide(cctx, contract.Input{Role: "coder", Tool: "ctx_read"})
		if err == nil || d.Decision != contract.Deny {
			t.Errorf("cancelled context: %+v, %v", d, err)
		}
	})
	t.Run("failed reload keeps the last good data", func(t *testing.T) {
		t.Parallel()
		e := testEngine(t)
		bad := compiler.Compile(testSet(t), compiler.DefaultConfig())
		r := bad.Roles["coder"]
		r.Denied = compiler.NewMatcher([]string{"*"})
		r.IO = map[string]any{"unserialisable": make(chan int)}
		bad.Roles["coder"] = r
		if err := e.Reload(ctx, bad); err == nil {
			t.Fatal("data that cannot be serialised was loaded")
		}
		if d, _ := e.Decide(ctx, contract.Input{Role: "coder", Tool: "ctx_read"}); d.Decision != contract.Allow {
			t.Errorf("engine changed after a failed reload: %+v", d)
		}
	})
}

// The policy's levels are rule 5 of the contract, as written there, for
// every role and a spread of usages.
func TestLevelsAreTheContracts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testEngine(t)
	for name, r := range e.Document().Roles {
		l := r.Limits
		for _, used := range []int64{0, 1, 2, 79, 80, 99, 100, 101, 119999, 120000, 149999, 150000, 159999, 160000, 199999, 200000, 4_000_000, 5_000_000, 1 << 40} {
			d, _ := e.Decide(ctx, contract.Input{Role: name, Tool: "ctx_session", Budget: contract.Usage{Tokens: used, Shell: used, CostMicros: used}})
			for _, dim := range []struct {
				name  string
				got   string
				limit int64
			}{{"tokens", d.Budget.Tokens.Level, l.Tokens}, {"shell", d.Budget.Shell.Level, l.Shell}, {"cost", d.Budget.Cost.Level, l.CostMicros}} {
				want := contract.LevelOK
				switch {
				case dim.limit > 0 && l.BlockPercent <= 100 && used*100 >= dim.limit*l.BlockPercent:
					want = contract.LevelExhausted
				case dim.limit > 0 && used*100 >= dim.limit*l.WarnPercent, dim.limit == 0 && used > 0:
					want = contract.LevelWarning
				}
				if dim.got != want {
					t.Errorf("%s %s at %d: policy %s, contract %s", name, dim.name, used, dim.got, want)
				}
			}
		}
	}
}

func TestTrace(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	var full, fails strings.Builder
	d, err := e.Trace(context.Background(), contract.Input{Role: "reviewer", Tool: "ctx_edit"}, "full", &full)
	if err != nil || d.Decision != contract.Deny {
		t.Fatalf("%+v, %v", d, err)
	}
	if !strings.Contains(full.String(), "harness.rego:") || !strings.Contains(full.String(), "data.harness.decision") {
		t.Errorf("full trace lacks locations or the query:\n%.500s", full.String())
	}
	if _, err := e.Trace(context.Background(), contract.Input{Role: "reviewer", Tool: "ctx_edit"}, "fails", &fails); err != nil || fails.Len() >= full.Len() {
		t.Errorf("fails trace (%d bytes) is not a filter of the full one (%d bytes): %v", fails.Len(), full.Len(), err)
	}
	if _, err := e.Trace(context.Background(), contract.Input{Role: "coder", Tool: "x"}, "everything", &fails); err == nil {
		t.Error("an unknown trace mode was accepted")
	}
}

// A call the role asks for is decided "ask": not allowed until a person
// answers, with the reason approval_required and the warnings it has.
func TestDecideAsk(t *testing.T) {
	t.Parallel()
	files := maps.Clone(testRoles)
	files["careful"] = "[tools]\ndenied = [\"ctx_edit\"]\nask = [\"ctx_shell\"]\n[limits]\nmax_context_tokens = 1000\n"
	e, err := New(context.Background(), compiler.Compile(testroles.Set(t, files), compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	for _, tt := range []struct {
		name     string
		in       contract.Input
		decision string
		codes    []string
		warnings int
	}{
		{"asked", contract.Input{Role: "careful", Tool: "ctx_shell"}, contract.Ask, []string{contract.CodeApprovalRequired}, 0},
		{"asked, warned", contract.Input{Role: "careful", Tool: "ctx_shell", Budget: contract.Usage{Tokens: 900}}, contract.Ask, []string{contract.CodeApprovalRequired}, 1},
		{"denied", contract.Input{Role: "careful", Tool: "ctx_edit"}, contract.Deny, []string{contract.CodeToolDenied}, 0},
		{"exhausted", contract.Input{Role: "careful", Tool: "ctx_shell", Budget: contract.Usage{Tokens: 1000}}, contract.Deny, []string{contract.CodeBudgetExhausted}, 0},
		{"not asked", contract.Input{Role: "careful", Tool: "ctx_read"}, contract.Allow, nil, 0},
	} {
		d, err := e.Decide(context.Background(), tt.in)
		var codes []string
		for _, r := range d.Reasons {
			codes = append(codes, r.Code)
		}
		if err != nil || d.Decision != tt.decision || d.Allowed != (tt.decision == contract.Allow) || !slices.Equal(codes, tt.codes) || len(d.Warnings) != tt.warnings {
			t.Errorf("%s: %+v, %v", tt.name, d, err)
		}
	}
}
