package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/internal/strict"
	"github.com/agentharness/harness/roles"
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
	files(t, project, map[string]string{".git": "", "pkg/x.go": "", "pkg/.lean-ctx/harness.toml": ""})
	loc, err := Locate(params(home, filepath.Join(project, "pkg"), map[string]string{"XDG_DATA_HOME": filepath.Join(home, "data")}))
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(project, "pkg")
	want := []string{
		filepath.Join(project, ".lean-ctx", "roles"),
		filepath.Join(pkg, ".lean-ctx", "roles"),
		filepath.Join(home, ".lean-ctx", "roles"),
		filepath.Join(home, "data", "lean-ctx", "roles"),
		filepath.Join(project, ".lean-ctx", "policies"),
		filepath.Join(pkg, ".lean-ctx", "policies"),
		filepath.Join(home, ".lean-ctx", "policies"),
		filepath.Join(home, "data", "lean-ctx", "policies"),
		filepath.Join(home, ".lean-ctx", "harness.toml"),
		filepath.Join(project, ".lean-ctx", "harness.toml"),
		filepath.Join(pkg, ".lean-ctx", "harness.toml"),
	}
	if loc.Root != project || !slices.Equal(loc.Sources(), want) {
		t.Errorf("root %s, sources:\n%s\nwant:\n%s", loc.Root, strings.Join(loc.Sources(), "\n"), strings.Join(want, "\n"))
	}
	if layers := []string{filepath.Join(project, ".lean-ctx"), filepath.Join(pkg, ".lean-ctx")}; !slices.Equal(loc.Layers, layers) || !slices.Equal(loc.FoundLayers(), layers) {
		t.Errorf("layers %v, found %v", loc.Layers, loc.FoundLayers())
	}
	// A layer that does not exist yet is watched, not shown.
	loc, _ = Locate(params(home, filepath.Join(project, "pkg", "deeper"), nil))
	if n := len(loc.Sources()); n != 11+3 || len(loc.FoundLayers()) != 2 {
		t.Errorf("%d sources, found layers %v", n, loc.FoundLayers())
	}
	// --project names the root: the layers between it and the working
	// directory apply as when it is found.
	p := params(home, pkg, nil)
	p.Project = project
	if loc, err := Locate(p); err != nil || len(loc.Layers) != 2 || loc.Root != project {
		t.Errorf("--project from below it: %+v %v", loc, err)
	}
	// The home directory is never a project: its .lean-ctx holds the user's files.
	if loc, _ := Locate(params(home, home, nil)); loc.Root != "" || loc.RoleDirs.Project != nil || loc.ConfigFiles.Project != nil || loc.Layers != nil {
		t.Errorf("home as a project: %+v", loc)
	}
	p = params(home, home, nil)
	p.Project = filepath.Join(home, "missing")
	if _, err := Locate(p); err == nil || !strings.Contains(err.Error(), "--project") {
		t.Errorf("a missing --project: %v", err)
	}
}

// A .lean-ctx made in a subdirectory adds to the repository's rules and
// never hides them: its roles, policies and configuration apply beside
// the root's, and a name is defined once.
func TestNestedLayers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	policy, err := os.ReadFile("../examples/policies/destructive_shell.rego")
	if err != nil {
		t.Fatal(err)
	}
	repoFiles := map[string]string{
		".git/HEAD":                           "ref: refs/heads/main\n",
		".lean-ctx/roles/team.toml":           "[role]\ninherits = \"coder\"\n",
		".lean-ctx/policies/destructive.rego": string(policy),
		".lean-ctx/harness.toml":              "[tools]\nshell = [\"run\"]\n",
	}
	tests := []struct {
		name   string
		nested map[string]string // files of repo/pkg
		roles  []string          // the project's roles
		custom int
		shell  []string
		want   string // an error
	}{
		{name: "an empty nested .lean-ctx", nested: map[string]string{".lean-ctx/.keep": ""},
			roles: []string{"team"}, custom: 1, shell: []string{"ctx_shell", "ctx_execute", "run"}},
		{name: "a nested layer of its own", nested: map[string]string{
			".lean-ctx/roles/pkg.toml":            "[role]\ninherits = \"team\"\n",
			".lean-ctx/policies/destructive.rego": strings.Replace(string(policy), "custom.destructive_shell", "custom.pkg_destructive_shell", 1),
			".lean-ctx/harness.toml":              "[tools]\nshell = [\"pkg_run\"]\n",
		}, roles: []string{"pkg", "team"}, custom: 2, shell: []string{"ctx_shell", "ctx_execute", "run", "pkg_run"}},
		{name: "a nested layer taking the root's name", nested: map[string]string{".lean-ctx/roles/team.toml": "[role]\ninherits = \"reviewer\"\n"},
			want: `pkg/.lean-ctx/roles/team.toml:1:1: role "team" is already defined by REPO/.lean-ctx/roles/team.toml (project)`},
		{name: "a nested layer loosening the configuration", nested: map[string]string{".lean-ctx/harness.toml": "[enforcement]\nmode = \"shadow\"\n"},
			want: `pkg/.lean-ctx/harness.toml:2:1: enforcement.mode may only be set in the user's harness.toml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			repo := filepath.Join(home, "repo")
			files(t, repo, repoFiles)
			files(t, filepath.Join(repo, "pkg"), tt.nested)
			h, err := Load(ctx, params(home, filepath.Join(repo, "pkg"), nil))
			if tt.want != "" {
				if want := strings.ReplaceAll(tt.want, "REPO", repo); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%v\nwant …%s…", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var project []string
			for _, r := range h.Roles.All() {
				if r.Source == roles.SourceProject {
					project = append(project, r.Name)
				}
			}
			if h.Root != repo || h.Project() != repo || !slices.Equal(project, tt.roles) || len(h.Custom) != tt.custom || !slices.Equal(h.Config.ShellTools, tt.shell) {
				t.Errorf("root %s, roles %v, %d custom, shell %v", h.Root, project, len(h.Custom), h.Config.ShellTools)
			}
			for _, tool := range tt.shell {
				d, err := h.Engine.Decide(ctx, contract.Input{Role: "team", Tool: tool, Project: h.Project(),
					Arguments: map[string]any{"command": "git push --force origin main"}})
				if err != nil || d.Decision != contract.Deny || d.Reasons[0].Code != contract.CodePolicy {
					t.Errorf("a force push through %s from repo/pkg: %+v %v", tool, d, err)
				}
			}
		})
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
		tls    bool
		want   string
	}{
		{"127.0.0.1:8765", false, 0, false, ""},
		{"localhost:8765", false, 0, false, ""},
		{"[::1]:8765", false, 0, false, ""},
		{"0.0.0.0:8765", false, 1, true, "not a loopback address"},
		{"0.0.0.0:8765", true, 0, true, "needs bearer tokens"},
		{"0.0.0.0:8765", true, 1, false, "needs TLS"},
		{"192.0.2.7:8765", true, 1, false, "needs TLS"},
		{"0.0.0.0:8765", true, 1, true, ""},
		{"8765", false, 0, false, "want host:port"},
	} {
		err := CheckAddr(tt.addr, tt.remote, tt.tokens, tt.tls)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s remote=%v tokens=%d tls=%v: %v, want %q", tt.addr, tt.remote, tt.tokens, tt.tls, err, tt.want)
		}
	}
}

// A project's .lean-ctx that links out of the project is refused once,
// naming the link, whatever reads it (roles, policies, configuration).
func TestLayerLinkingOut(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	repo := filepath.Join(home, "repo")
	files(t, home, map[string]string{
		"repo/.git/HEAD":                    "",
		"elsewhere/roles/admin2.toml":       "[role]\ninherits = \"admin\"\n",
		"elsewhere/policies/allow.rego":     "package harness.custom.allow\n",
		"elsewhere/harness.toml":            "[tools]\nshell = [\"x\"]\n",
		"repo/pkg/.lean-ctx/roles/pkg.toml": "[role]\n",
	})
	if err := os.Symlink(filepath.Join(home, "elsewhere"), filepath.Join(repo, ".lean-ctx")); err != nil {
		t.Fatal(err)
	}
	_, err := Load(context.Background(), params(home, filepath.Join(repo, "pkg"), nil))
	var list strict.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].File != filepath.Join(repo, ".lean-ctx") ||
		!strings.Contains(list[0].Msg, "refused: a symbolic link that leads out of the project root") || strings.Contains(err.Error(), "elsewhere") {
		t.Errorf("%v", err)
	}
}

// The user's [ledger] reaches the store's options: replicas = 0 is none,
// even with Sentinel, and no replicas key leaves the store's default.
func TestLedgerOptions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		toml string
		want budget.Options
	}{
		{"", budget.Options{}},
		{"[ledger]\nprefix = \"team:\"\nttl = \"1h\"\ntimeout = \"300ms\"\n",
			budget.Options{Prefix: "team:", TTL: time.Hour, Timeout: 300 * time.Millisecond}},
		{"[ledger]\nreplicas = 0\n", budget.Options{Replicas: -1}},
		{"[ledger]\nreplicas = 2\n", budget.Options{Replicas: 2}},
	} {
		home := t.TempDir()
		files(t, home, map[string]string{".lean-ctx/harness.toml": tt.toml})
		h, err := Load(context.Background(), params(home, home, nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := h.LedgerOptions(); got != tt.want {
			t.Errorf("%q: %+v, want %+v", tt.toml, got, tt.want)
		}
	}
}

// The harness's binaries are protected where the user may replace them:
// the binary and the small hook binary beside it, whether that is there
// yet or not.
func TestBinaries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "harness")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := Binaries(exe), []string{exe, filepath.Join(dir, "harness-hook")}; !slices.Equal(got, want) {
		t.Errorf("a binary in a writable directory: %q, want %q", got, want)
	}
	for _, exe := range []string{"", "harness", "bin/harness"} {
		if got := Binaries(exe); got != nil {
			t.Errorf("%q: %q, want none", exe, got)
		}
	}
	if os.Geteuid() != 0 { // root may write anything
		if got := Binaries("/proc/self/exe"); got != nil {
			t.Errorf("a binary the user may not replace: %q, want none", got)
		}
	}
}
