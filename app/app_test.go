package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/internal/strict"
)

// files writes files (path relative to root → content).
func files(t *testing.T, root string, list map[string]string) {
	t.Helper()
	for name, content := range list {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// params are the load parameters of a home and a working directory.
func params(home, workDir string, vars map[string]string) Params {
	return Params{Env: Env{WorkDir: workDir, Home: home, Getenv: func(k string) string { return vars[k] }}}
}

func TestLocate(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	project := filepath.Join(home, "src", "app")
	files(t, project, map[string]string{".git": "", "pkg/x.go": ""})
	loc, err := Locate(params(home, filepath.Join(project, "pkg"), map[string]string{"XDG_DATA_HOME": filepath.Join(home, "data")}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(project, ".lean-ctx", "roles"),
		filepath.Join(home, ".lean-ctx", "roles"),
		filepath.Join(home, "data", "lean-ctx", "roles"),
		filepath.Join(project, ".lean-ctx", "policies"),
		filepath.Join(home, ".lean-ctx", "policies"),
		filepath.Join(home, "data", "lean-ctx", "policies"),
		filepath.Join(home, ".lean-ctx", "harness.toml"),
		filepath.Join(project, ".lean-ctx", "harness.toml"),
	}
	if loc.Root != project || !slices.Equal(loc.Sources(), want) {
		t.Errorf("root %s, sources:\n%s\nwant:\n%s", loc.Root, strings.Join(loc.Sources(), "\n"), strings.Join(want, "\n"))
	}
	// The home directory is never a project: its .lean-ctx holds the user's files.
	if loc, _ := Locate(params(home, home, nil)); loc.Root != "" || loc.RoleDirs.Project != "" || loc.ProjectConfig != "" {
		t.Errorf("home as a project: %+v", loc)
	}
	p := params(home, home, nil)
	p.Project = filepath.Join(home, "missing")
	if _, err := Locate(p); err == nil || !strings.Contains(err.Error(), "--project") {
		t.Errorf("a missing --project: %v", err)
	}
}

// A load reports every problem of every file together, sorted, each at its
// place; the cross-checks are part of every load.
func TestLoadReportsEverything(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	project := filepath.Join(home, "p")
	files(t, home, map[string]string{
		".lean-ctx/harness.toml":           "[ledger]\nurll = \"x\"\n",
		"p/.lean-ctx/roles/bad.toml":       "[limits]\nmax_context_tokens = \"lots\"\n",
		"p/.lean-ctx/policies/broken.rego": "package harness.custom.broken\n\ndeny contains \"x\" if {\n",
	})
	_, err := Load(context.Background(), params(home, project, nil))
	var list strict.ErrorList
	if !errors.As(err, &list) || len(list) != 3 {
		t.Fatalf("want three errors, got %v", err)
	}
	for i, want := range []string{"harness.toml:2:1: unknown key \"urll\"", "broken.rego:4", "bad.toml:2:1: limits.max_context_tokens"} {
		if !strings.Contains(list[i].Error(), want) {
			t.Errorf("error %d: %v, want %q", i, list[i], want)
		}
	}

	// Good files, but references to roles there are not.
	home = t.TempDir()
	files(t, home, map[string]string{".lean-ctx/harness.toml": "[enforcement]\ndefault_role = \"lead\"\n[agents.ci]\nrole = \"coder\"\nmax_role = \"reviewer\"\n"})
	p := params(home, home, map[string]string{"LEAN_CTX_ROLE": "chief"})
	p.StartRole = "boss"
	_, err = Load(context.Background(), p)
	if !errors.As(err, &list) {
		t.Fatalf("want an error list, got %v", err)
	}
	got := list.Error()
	for _, want := range []string{
		`harness.toml:2:1: enforcement.default_role: unknown role "lead"`,
		`harness.toml:5:1: agents.ci.max_role: agent ci starts in role coder (agents.ci.role), which is beyond its max_role reviewer`,
		`$LEAN_CTX_ROLE: unknown role "chief"`,
		`--role: unknown role "boss"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
}

// Open wires a governor on the configured ledger and logs; Close releases
// them.
func TestOpen(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	state := filepath.Join(home, "state")
	h, err := Load(context.Background(), params(home, home, map[string]string{"XDG_STATE_HOME": state}))
	if err != nil {
		t.Fatal(err)
	}
	if h.LedgerURL("") != "sqlite:"+filepath.Join(state, "lean-ctx", "harness", "ledger.db") || h.LedgerURL("memory:") != "memory:" {
		t.Errorf("ledger URLs: %s, %s", h.LedgerURL(""), h.LedgerURL("memory:"))
	}
	g, err := h.Open(context.Background(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := h.Open(context.Background(), OpenOptions{}); again != g {
		t.Error("a second Open wired another governor")
	}
	o, err := g.Decide(context.Background(), govern.Call{Session: budget.Key{Session: "s"}, Tool: "ctx_edit", Role: "reviewer"})
	if err != nil || o.Decision.Decision != contract.Deny {
		t.Fatalf("%+v, %v", o, err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ledger.db", "events.jsonl", "decisions.jsonl"} {
		if _, err := os.Stat(filepath.Join(state, "lean-ctx", "harness", f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	files(t, home, map[string]string{".lean-ctx/harness.toml": "[log]\nevents = \"off\"\ndecisions = \"off\"\n"})
	h, err = Load(context.Background(), params(home, home, nil))
	if err != nil || h.EventsPath() != "" || h.DecisionsPath() != "" {
		t.Errorf("logs off: %q %q %v", h.EventsPath(), h.DecisionsPath(), err)
	}
}

// A reload puts the new roles, policies and role assignments in force in
// the governor; a broken edit keeps the last good ones and says where.
func TestReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	project := filepath.Join(home, "p")
	files(t, home, map[string]string{
		"p/.git":                      "",
		"p/.lean-ctx/roles/team.toml": "[role]\ninherits = \"coder\"\n",
		".lean-ctx/harness.toml":      "[agents.ci]\nrole = \"team\"\n",
	})
	h, err := Load(ctx, params(home, project, map[string]string{"XDG_STATE_HOME": filepath.Join(home, "state")}))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	g, err := h.Open(ctx, OpenOptions{Ledger: "memory:"})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(session string) contract.Decision {
		o, err := g.Decide(ctx, govern.Call{Session: budget.Key{Agent: "ci", Session: session}, Tool: "ctx_shell"})
		if err != nil {
			t.Fatal(err)
		}
		return o.Decision
	}
	if d := decide("1"); d.Role != "team" || d.Decision != contract.Allow {
		t.Fatalf("before: %+v", d)
	}
	files(t, home, map[string]string{
		"p/.lean-ctx/roles/team.toml":     "[role]\ninherits = \"coder\"\nshell_policy = \"deny\"\n",
		"p/.lean-ctx/roles/newbie.toml":   "[role]\ninherits = \"reviewer\"\n",
		".lean-ctx/harness.toml":          "[agents.ci]\nrole = \"newbie\"\n",
		"p/.lean-ctx/policies/no_ls.rego": "package harness.custom.no_ls\n\ndeny contains \"no ls\" if input.arguments.command == \"ls\"\n",
	})
	if err := h.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if d := decide("1"); d.Role != "team" || d.Reasons[0].Code != contract.CodeShellDenied {
		t.Errorf("a session keeps its role, under the new rules: %+v", d)
	}
	if d := decide("2"); d.Role != "newbie" {
		t.Errorf("a new session of agent ci starts in its new role: %+v", d)
	}
	files(t, home, map[string]string{"p/.lean-ctx/roles/team.toml": "[role]\ninherits = \"nobody\"\n"})
	err = h.Reload(ctx)
	var list strict.ErrorList
	if !errors.As(err, &list) || !strings.Contains(list.Error(), "team.toml:2:1") {
		t.Errorf("a broken edit: %v", err)
	}
	if d := decide("3"); d.Role != "newbie" || d.Decision != contract.Deny {
		t.Errorf("the last good rules stay: %+v", d)
	}
}

// A reload may not take away the role a gateway token starts sessions in:
// tokens are read at start.
func TestReloadKeepsTokensRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	files(t, home, map[string]string{
		".lean-ctx/roles/bot.toml": "[role]\ninherits = \"reviewer\"\n",
		".lean-ctx/harness.toml":   "[[gateway.tokens]]\nagent = \"bot\"\ntoken = \"0123456789abcdef-bot\"\nrole = \"bot\"\n",
	})
	h, err := Load(ctx, params(home, home, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Open(ctx, OpenOptions{Ledger: "memory:"}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(home, ".lean-ctx", "harness.toml"))
	os.Remove(filepath.Join(home, ".lean-ctx", "roles", "bot.toml"))
	if err := h.Reload(ctx); err == nil || !strings.Contains(err.Error(), `role "bot" is gone`) {
		t.Errorf("reload: %v", err)
	}
	if err := (&Harness{}).Reload(ctx); err == nil {
		t.Error("a harness that is not open reloaded")
	}
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		addr   string
		remote bool
		tokens int
		want   string
	}{
		{"127.0.0.1:8765", false, 0, ""},
		{"localhost:8765", false, 0, ""},
		{"[::1]:8765", false, 0, ""},
		{"0.0.0.0:8765", false, 1, "not a loopback address"},
		{"0.0.0.0:8765", true, 0, "needs bearer tokens"},
		{"0.0.0.0:8765", true, 1, ""},
		{"8765", false, 0, "want host:port"},
	} {
		err := CheckAddr(tt.addr, tt.remote, tt.tokens)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s remote=%v tokens=%d: %v, want %q", tt.addr, tt.remote, tt.tokens, err, tt.want)
		}
	}
}
