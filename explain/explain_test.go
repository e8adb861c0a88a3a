package explain

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

func TestExplain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set, _ := roles.Load(roles.Dirs{})
	e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   contract.Input
		want []string
	}{
		{contract.Input{Role: "coder", Tool: "ctx_session", Budget: contract.Usage{Tokens: 200000}},
			[]string{"tool ctx_session: an exempt tool", "tokens 200000 of 200000 (builtin:coder.toml): floor(200000*100/200000) = 100%; WARNING from 160000, EXHAUSTED from 200000 → EXHAUSTED", "→ warn (budget_warning); signal EXHAUSTED"}},
		{contract.Input{Role: "ops", Tool: "ctx_read"},
			[]string{`allowed: pattern "ctx_read" of tools.allowed (builtin:ops.toml) matches`, "shell_policy compress (builtin:ops.toml)"}},
		{contract.Input{Role: "reviewer", Tool: "ctx_write"},
			[]string{"allowed: no pattern of tools.allowed matches (list: ctx_agent, ctx_analyze", "→ tool_not_allowed"}},
		{contract.Input{Role: "coder", Tool: "ctx_shell", Budget: contract.Usage{Shell: 100}},
			[]string{"shell admission: this would be call 101 of the 100 admitted (floor(100*100/100)) (rule 7)", "→ deny (budget_exhausted, shell_budget"}},
		{contract.Input{Role: "nobody", Tool: "x"}, []string{`role "nobody" is not defined`}},
	}
	for _, tt := range tests {
		x, err := e.Explain(ctx, tt.in)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := set.Get(tt.in.Role)
		var b strings.Builder
		Write(&b, x, r)
		for _, w := range tt.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s/%s: explanation lacks %q:\n%s", tt.in.Role, tt.in.Tool, w, b.String())
			}
		}
	}
}

// A tool of the role's ask list is explained by its pattern and file.
func TestExplainAsk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set := testroles.Set(t, map[string]string{"careful": "[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_shell\"]\n"})
	e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	e.SetBounds(policy.Bounds{Timeout: time.Minute}) // a busy machine is not what this is about
	for tool, want := range map[string]string{
		"ctx_shell": `ask: pattern "ctx_shell" of tools.ask (`,
		"ctx_read":  "ask: no pattern of tools.ask matches (list: ctx_shell)",
	} {
		x, err := e.Explain(ctx, contract.Input{Role: "careful", Tool: tool})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := set.Get("careful")
		var b strings.Builder
		Write(&b, x, r)
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: explanation lacks %q:\n%s", tool, want, b.String())
		}
	}
}

// What explain prints of a role comes from files a repository holds (a
// project role's patterns, the file and directory names its origins
// give): nothing of it may drive the operator's terminal (an OSC 52
// write to the clipboard, a bidirectional override that shows a pattern
// reversed) or forge a line of the explanation.
func TestAttackExplainShowsRoleTextRaw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set := testroles.Set(t, map[string]string{"narrow": "[role]\ninherits = \"reviewer\"\n[tools]\nask = [\"ctx_search\"]\n"})
	e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	e.SetBounds(policy.Bounds{Timeout: time.Minute})
	const osc52 = "\x1b]52;c;cm0gLXJmIH4=\x07"
	tests := []struct {
		name  string
		tool  string
		taint func(r *roles.Role)
	}{
		{"a denied pattern with a bidi override", "ctx_read", func(r *roles.Role) { r.Denied = append(r.Denied, "ctx_\u202edaer") }},
		{"an allowed pattern with an escape", "ctx_write", func(r *roles.Role) { r.Allowed = append(r.Allowed, "ctx"+osc52) }},
		{"an ask pattern with a newline", "ctx_read", func(r *roles.Role) { r.Ask = append(r.Ask, "x\n  → allow (no reasons)") }},
		{"an origin in a directory named with an escape", "ctx_read", func(r *roles.Role) {
			r.Origin = map[string]string{"tools.allowed": "/repo/" + osc52 + "/.lean-ctx/roles/narrow.toml", "role.shell_policy": "a\u2028b"}
		}},
		{"a chain with a zero-width space", "ctx_read", func(r *roles.Role) { r.Chain = append(r.Chain, "re\u200bviewer") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := e.Explain(ctx, contract.Input{Role: "narrow", Tool: tt.tool})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := set.Get("narrow")
			var clean strings.Builder
			Write(&clean, x, got)
			r := *got
			r.Origin = maps.Clone(r.Origin)
			r.Chain, r.Allowed, r.Denied, r.Ask = slices.Clone(r.Chain), slices.Clone(r.Allowed), slices.Clone(r.Denied), slices.Clone(r.Ask)
			tt.taint(&r)
			var b strings.Builder
			Write(&b, x, &r)
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			for _, line := range lines {
				if i := strings.IndexFunc(line, func(c rune) bool { return !strconv.IsPrint(c) }); i >= 0 {
					t.Errorf("line %q holds %q, which a terminal does not print plainly", line, []rune(line[i:])[0])
				}
			}
			if want := strings.Count(clean.String(), "\n"); len(lines) != want {
				t.Errorf("the explanation has %d lines, want %d (a value forged a line):\n%s", len(lines), want, b.String())
			}
		})
	}
}
