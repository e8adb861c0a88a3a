package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/testroles"
)

// viewTools are tools of every kind the roles treat differently.
var viewTools = []string{"ctx_read", "ctx_edit", "ctx_shell", "ctx_execute", "ctx_session", "ctx_smart_read",
	"mcp__gh__read", "mcp__gh__list", "axb", "a?b", "other"}

func TestStatus(t *testing.T) {
	t.Parallel()
	e, ctx := testEngine(t), context.Background()
	tests := []struct {
		role   string
		usage  contract.Usage
		signal string
		line   string
	}{
		{"coder", contract.Usage{Tokens: 50000, Shell: 5, CostMicros: 500000}, contract.LevelOK,
			"Budget[coder]: tokens 50000/200000 (25%) | shell 5/100 (5%) | cost $0.50/$5.00 (10%) → OK"},
		{"coder", contract.Usage{Tokens: 170000}, contract.LevelWarning, ""},
		{"tight-reviewer", contract.Usage{Tokens: 1000}, contract.LevelExhausted, ""},
		{"reviewer", contract.Usage{Shell: 1}, contract.LevelWarning,
			"Budget[reviewer]: tokens 0/150000 (0%) | shell 1/0 (100%) | cost $0.00/$3.00 (0%) → WARNING"},
		{"never-block", contract.Usage{Tokens: 500}, contract.LevelWarning, ""},
	}
	for _, tt := range tests {
		st, err := e.Status(ctx, contract.Input{Role: tt.role, Budget: tt.usage})
		if err != nil || st.Signal != tt.signal || st.Role != tt.role || (tt.line != "" && st.StatusLine() != tt.line) {
			t.Errorf("%s %+v: %+v, %v; want signal %s %s", tt.role, tt.usage, st, err, tt.signal, tt.line)
		}
	}
	if _, err := e.Status(ctx, contract.Input{Role: "nobody", Budget: contract.Usage{}}); !errors.Is(err, ErrUnknownRole) {
		t.Errorf("unknown role: %v", err)
	}
}

// A status is the budget and signal of any decision on the same usage.
func TestStatusAgreesWithDecisions(t *testing.T) {
	t.Parallel()
	e, ctx := testEngine(t), context.Background()
	for _, role := range testSet(t).Names() {
		for _, u := range []contract.Usage{{}, {Tokens: 999, Shell: 1, CostMicros: 1}, {Tokens: 160000, Shell: 80, CostMicros: 4_000_000},
			{Tokens: 1 << 40, Shell: 1 << 20, CostMicros: 1 << 40}} {
			st, err := e.Status(ctx, contract.Input{Role: role, Budget: u})
			d, _ := e.Decide(ctx, contract.Input{Role: role, Tool: "ctx_read", Budget: u})
			if err != nil || st != d.Status() {
				t.Errorf("%s %+v: status %+v, %v; decision %+v", role, u, st, err, d.Status())
			}
		}
	}
}

// A listing shows a tool exactly when a call of it is not refused by the
// tool lists or the shell policy.
func TestVisibleAgreesWithDecisions(t *testing.T) {
	t.Parallel()
	e, ctx := testEngine(t), context.Background()
	access := []string{contract.CodeToolDenied, contract.CodeToolNotAllowed, contract.CodeShellDenied}
	for _, role := range testSet(t).Names() {
		shown, err := e.Visible(ctx, role, contract.Named(viewTools...))
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range viewTools {
			d, _ := e.Decide(ctx, contract.Input{Role: role, Tool: tool})
			refused := slices.ContainsFunc(d.Reasons, func(r contract.Reason) bool { return slices.Contains(access, r.Code) })
			if shown[tool] == refused {
				t.Errorf("role %s, tool %s: shown %v, but the decision is %s %+v", role, tool, shown[tool], d.Decision, d.Reasons)
			}
		}
	}
	if shown, err := e.Visible(ctx, "reviewer", contract.Named(viewTools...)); err != nil || !maps.Equal(shown, map[string]bool{"ctx_read": true, "ctx_session": true, "ctx_smart_read": true}) {
		t.Errorf("reviewer sees %v, %v", shown, err)
	}
	if shown, err := e.Visible(ctx, "nobody", contract.Named(viewTools...)); err != nil || len(shown) != 0 {
		t.Errorf("an unknown role sees %v, %v", shown, err)
	}
}

// An explanation's patterns are those that match, read literally but for
// '*', and agree with the decision.
func TestExplanationPatterns(t *testing.T) {
	t.Parallel()
	patterns := []string{"ctx_*", "*_read", "mcp__*__list*", "a*b*a", "x?y*", "[ab]*", "a-b*", "{x,y}*", "exact", "*"}
	tools := []string{"ctx_read", "ctx_", "read", "my_read", "mcp__gh__list", "mcp__gh__listing", "mcp____list", "aba", "ab",
		"abxba", "x?yz", "xayz", "[ab]c", "ac", "a-bc", "abc", "{x,y}z", "xz", "exact", "exactly"}
	ctx := context.Background()
	for _, p := range patterns {
		set := testroles.Set(t, map[string]string{"p": fmt.Sprintf("[tools]\nallowed = [%q]\ndenied = [%q]\n", p, p)})
		e, err := New(ctx, compiler.Compile(set, compiler.Config{}))
		if err != nil {
			t.Fatal(err)
		}
		relaxed(e)
		allowOnly, err := New(ctx, compiler.Compile(testroles.Set(t, map[string]string{"p": fmt.Sprintf("[tools]\nallowed = [%q]\n", p)}), compiler.Config{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools {
			x, err := e.Explain(ctx, contract.Input{Role: "p", Tool: tool})
			if err != nil {
				t.Fatal(err)
			}
			d, _ := allowOnly.Decide(ctx, contract.Input{Role: "p", Tool: tool})
			matched := len(x.AllowedBy) == 1 && x.AllowedBy[0] == p
			if matched != d.Allowed || !slices.Equal(x.DeniedBy, x.AllowedBy) || matched != (x.Decision.Reasons[0].Code == contract.CodeToolDenied) {
				t.Errorf("pattern %q, tool %q: allowed by %v, denied by %v, decided %+v; allowed alone: %v", p, tool, x.AllowedBy, x.DeniedBy, x.Decision.Reasons, d.Allowed)
			}
		}
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	e, ctx := testEngine(t), context.Background()
	x, err := e.Explain(ctx, contract.Input{Role: "tight-reviewer", Tool: "ctx_shell", Budget: contract.Usage{Tokens: 900}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := e.Decide(ctx, contract.Input{Role: "tight-reviewer", Tool: "ctx_shell", Budget: contract.Usage{Tokens: 900}})
	if x.Decision.Decision != d.Decision || !slices.Equal(x.DeniedBy, []string{"ctx_shell"}) || len(x.AllowedBy) != 0 ||
		!x.ShellTool || x.Exempt || x.Limits.Tokens != 1000 || x.Thresholds["tokens"].WarnAt != 800 || *x.Thresholds["tokens"].ExhaustedAt != 1000 {
		t.Errorf("%+v", x)
	}
	if x, _ := e.Explain(ctx, contract.Input{Role: "coder", Tool: "ctx_session"}); !x.Exempt || x.Decision.Decision != contract.Allow {
		t.Errorf("exempt: %+v", x)
	}
	if x, _ := e.Explain(ctx, contract.Input{Role: "coder", Tool: "x", Arguments: map[string]any{"f": func() {}}}); x.Decision.Reasons[0].Code != contract.CodeInvalidInput {
		t.Errorf("arguments that are not JSON: %+v", x)
	}
}

// Switch targets answer for every role what Switch answers for one.
func TestSwitchTargets(t *testing.T) {
	t.Parallel()
	e, ctx := testEngine(t), context.Background()
	for _, in := range []contract.SwitchInput{
		{From: "reviewer", By: contract.ByAgent},
		{From: "coder", By: contract.ByAgent, MaxRole: "coder"},
		{From: "coder", By: contract.ByOperator, MaxRole: "reviewer"},
	} {
		targets, err := e.SwitchTargets(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(slices.Sorted(maps.Keys(targets)), testSet(t).Names()) {
			t.Errorf("%+v: targets %v", in, targets)
		}
		for to, allowed := range targets {
			one := in
			one.To = to
			if s, _ := e.Switch(ctx, one); s.Allowed != allowed {
				t.Errorf("%+v → %s: targets say %v, Switch %+v", in, to, allowed, s)
			}
		}
	}
}

// Levels are the levels and signal of the status of each usage, all in one
// evaluation.
func TestLevelsAgreeWithStatus(t *testing.T) {
	t.Parallel()
	e, ctx := testEngine(t), context.Background()
	var usages []RoleUsage
	for _, role := range append(testSet(t).Names(), "nobody") {
		for _, u := range []contract.Usage{{}, {Tokens: 999, Shell: 1, CostMicros: 1}, {Tokens: 160000, Shell: 80, CostMicros: 4_000_000},
			{Tokens: 200000, Shell: 100, CostMicros: 5_000_000}, {Tokens: 1 << 40, Shell: 1 << 20, CostMicros: 1 << 40}} {
			usages = append(usages, RoleUsage{Role: role, Usage: u})
		}
	}
	levels, err := e.Levels(ctx, usages...)
	if err != nil || len(levels) != len(usages) {
		t.Fatalf("%d levels for %d usages: %v", len(levels), len(usages), err)
	}
	for i, u := range usages {
		st, err := e.Status(ctx, contract.Input{Role: u.Role, Budget: u.Usage})
		want := Levels{Tokens: st.Budget.Tokens.Level, Shell: st.Budget.Shell.Level, Cost: st.Budget.Cost.Level, Signal: st.Signal, Defined: true}
		if err != nil {
			want = Levels{}
		}
		if !reflect.DeepEqual(levels[i], want) {
			t.Errorf("%s %+v: levels %+v, status %+v", u.Role, u.Usage, levels[i], want)
		}
	}
	if l, err := e.Levels(ctx); err != nil || len(l) != 0 {
		t.Errorf("no usages: %v, %v", l, err)
	}
}
