package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
)

// The agent writes a broken file into its repository's .lean-ctx: every
// reload from then on fails. Were the last good rules to stay in force,
// the agent would hold the rules of its choosing past any tightening the
// operator makes after: when a project's file is at fault, the rules
// decide nothing until the files load again (every call but an exempt
// tool's refused, every switch too). A fault of the user's own files
// keeps the last good policy, as before.
func TestAttackBrokenProjectFileFreezesPolicy(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		broken map[string]string // what breaks, under home; "p/" is the project
		// restrained: the rules in force decide nothing until the files
		// load; else the last good policy stays.
		restrained bool
	}{
		{"a project role file that does not parse", map[string]string{"p/.lean-ctx/roles/junk.toml": "[role\n"}, true},
		{"a project policy that does not compile", map[string]string{"p/.lean-ctx/policies/junk.rego": "package harness.custom.junk\n\ndeny contains \"x\" if {\n"}, true},
		{"a project harness.toml key it may not set", map[string]string{"p/.lean-ctx/harness.toml": "[protect]\nenabled = false\n"}, true},
		{"a project role taking a user's role's name", map[string]string{"p/.lean-ctx/roles/tight.toml": "[role]\ninherits = \"coder\"\n", ".lean-ctx/roles/tight.toml": "[role]\ninherits = \"reviewer\"\n"}, true},
		{"a nested layer's role file", map[string]string{"p/sub/.lean-ctx/roles/junk.toml": "[role\n"}, true},
		{"the user's own typo", map[string]string{".lean-ctx/roles/junk.toml": "[role\n"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			home := t.TempDir()
			project := filepath.Join(home, "p")
			files(t, home, map[string]string{
				"p/.git":                 "",
				"p/sub/x.go":             "",
				".lean-ctx/harness.toml": "[agents.ci]\nrole = \"reviewer\"\nmax_role = \"coder\"\n",
			})
			h, err := Load(ctx, params(home, filepath.Join(project, "sub"), map[string]string{"XDG_STATE_HOME": filepath.Join(home, "state")}))
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			g, err := h.Open(ctx, OpenOptions{Ledger: "memory:"})
			if err != nil {
				t.Fatal(err)
			}
			k := budget.Key{Agent: "ci", Session: "1"}
			decide := func(tool string) contract.Decision {
				t.Helper()
				o, err := g.Decide(ctx, govern.Call{Session: k, Tool: tool})
				if err != nil {
					t.Fatal(err)
				}
				return o.Decision
			}
			if d := decide("ctx_search"); d.Decision != contract.Allow {
				t.Fatalf("before: %+v", d)
			}
			files(t, home, tt.broken)
			err = h.Reload(ctx)
			if err == nil {
				t.Fatal("the broken files loaded")
			}
			d := decide("ctx_search")
			if !tt.restrained {
				if d.Decision != contract.Allow {
					t.Errorf("the user's own typo: the last good policy should stay: %s %+v", d.Decision, d.Reasons)
				}
				return
			}
			if d.Decision != contract.Deny || len(d.Reasons) == 0 || d.Reasons[0].Code != contract.CodeEvalError ||
				!strings.Contains(d.Reasons[0].Message, "the project's files do not load") {
				t.Errorf("with the project's files broken: %s %+v", d.Decision, d.Reasons)
			}
			if d := decide("ctx_session"); d.Decision != contract.Allow {
				t.Errorf("an exempt tool with the project's files broken: %s %+v", d.Decision, d.Reasons)
			}
			sw, err := g.Switch(ctx, k, "coder", "agent")
			if err != nil || sw.Decision.Allowed {
				t.Errorf("a switch within max_role with the project's files broken: %+v %v", sw.Decision, err)
			}
			// The operator tightens the reviewer meanwhile: once the
			// project's files load again, that is what decides.
			files(t, home, map[string]string{".lean-ctx/roles/reviewer.toml": "[role]\ninherits = \"reviewer\"\n\n[tools]\ndenied = [\"ctx_edit\", \"ctx_shell\", \"ctx_execute\", \"ctx_search\"]\n"})
			for name := range tt.broken {
				if strings.HasPrefix(name, "p/") {
					os.Remove(filepath.Join(home, name))
				}
			}
			if err := h.Reload(ctx); err != nil {
				t.Fatalf("the mended files: %v", err)
			}
			if d := decide("ctx_search"); d.Decision != contract.Deny || d.Reasons[0].Code != contract.CodeToolDenied {
				t.Errorf("after the operator's tightening: %s %+v", d.Decision, d.Reasons)
			}
			if d := decide("ctx_read"); d.Decision != contract.Allow {
				t.Errorf("once the files load again: %s %+v", d.Decision, d.Reasons)
			}
		})
	}
}
