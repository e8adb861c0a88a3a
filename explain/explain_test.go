package explain

import (
	"context"
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
