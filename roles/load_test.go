package roles

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeRoles writes name → TOML text into dir.
func writeRoles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuiltinFigures(t *testing.T) {
	t.Parallel()
	set, err := Load(Dirs{})
	if err != nil {
		t.Fatal(err)
	}
	// The contract's table of built-in roles.
	tests := []struct {
		name                string
		policy              ShellPolicy
		tokens, shell, cost int64
		warn, block         int64
		privileged          bool
	}{
		{"coder", ShellTrack, 200000, 100, 5_000_000, 80, 100, false},
		{"reviewer", ShellTrack, 150000, 0, 3_000_000, 80, 100, false},
		{"debugger", ShellTrack, 150000, 200, 5_000_000, 80, 100, false},
		{"ops", ShellCompress, 100000, 300, 3_000_000, 80, 100, true},
		{"admin", ShellTrack, 500000, 500, 50_000_000, 90, 100, true},
	}
	for _, tt := range tests {
		r, ok := set.Get(tt.name)
		if !ok {
			t.Fatalf("no built-in %q", tt.name)
		}
		want := Limits{tt.tokens, tt.shell, tt.cost, tt.warn, tt.block}
		if r.Limits != want || r.ShellPolicy != tt.policy || r.Privileged != tt.privileged || r.Source != SourceBuiltin {
			t.Errorf("%s: %+v %s privileged=%v, want %+v %s %v", tt.name, r.Limits, r.ShellPolicy, r.Privileged, want, tt.policy, tt.privileged)
		}
	}
	reviewer, _ := set.Get("reviewer")
	for _, tool := range []string{"ctx_edit", "ctx_shell", "ctx_execute"} {
		if !slices.Contains(reviewer.Denied, tool) {
			t.Errorf("reviewer does not deny %s", tool)
		}
	}
	if got := set.Names(); !slices.Equal(got, []string{"admin", "coder", "debugger", "ops", "reviewer"}) {
		t.Errorf("names %v", got)
	}
}

func TestInheritancePerKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	project := filepath.Join(dir, "proj", ProjectRolesDir)
	writeRoles(t, project, map[string]string{
		// Only [limits]: keeps reviewer's tools, shell policy, description.
		"tight-reviewer.toml": "[role]\ninherits = \"reviewer\"\n\n[limits]\nmax_context_tokens = 1000\n",
		// A grandchild that changes only the shell policy.
		"deny-shell.toml": "[role]\ninherits = \"tight-reviewer\"\nshell_policy = \"deny\"\n",
		// No parent, no tools, no limits: all tools, the coder's limits.
		"bare.toml": "[role]\ndescription = \"bare\"\n",
		// Explicit empty allow list: nothing allowed.
		"nothing.toml": "[tools]\nallowed = []\n",
	})
	set, err := Load(Dirs{Project: []string{project}})
	if err != nil {
		t.Fatal(err)
	}
	reviewer, _ := set.Get("reviewer")
	tr, _ := set.Get("tight-reviewer")
	if !slices.Equal(tr.Allowed, reviewer.Allowed) || !slices.Equal(tr.Denied, reviewer.Denied) {
		t.Errorf("tight-reviewer tools %v / %v, want reviewer's", tr.Allowed, tr.Denied)
	}
	if tr.Limits.MaxContextTokens != 1000 || tr.Limits.MaxCostMicros != 3_000_000 || tr.Limits.WarnAtPercent != 80 {
		t.Errorf("tight-reviewer limits %+v", tr.Limits)
	}
	if tr.Description != reviewer.Description {
		t.Errorf("description %q not inherited", tr.Description)
	}
	ds, _ := set.Get("deny-shell")
	if ds.ShellPolicy != ShellDeny || ds.Limits.MaxContextTokens != 1000 || !slices.Equal(ds.Chain, []string{"deny-shell", "tight-reviewer", "reviewer"}) {
		t.Errorf("deny-shell: %s %+v %v", ds.ShellPolicy, ds.Limits, ds.Chain)
	}
	// Provenance: each field names the file that set it.
	wantOrigin := map[string]string{
		"role.shell_policy":         filepath.Join(project, "deny-shell.toml"),
		"limits.max_context_tokens": filepath.Join(project, "tight-reviewer.toml"),
		"limits.max_cost_usd":       "builtin:reviewer.toml",
		"tools.allowed":             "builtin:reviewer.toml",
	}
	for k, want := range wantOrigin {
		if ds.Origin[k] != want {
			t.Errorf("origin of %s = %q, want %q", k, ds.Origin[k], want)
		}
	}
	bare, _ := set.Get("bare")
	if !slices.Equal(bare.Allowed, []string{"*"}) || len(bare.Denied) != 0 || bare.Limits.MaxContextTokens != 200000 || bare.ShellPolicy != ShellTrack {
		t.Errorf("bare: %+v", bare)
	}
	if bare.Origin["limits.max_context_tokens"] != "default (the coder's limit)" || bare.Origin["tools.allowed"] != "default" {
		t.Errorf("bare origins: %v", bare.Origin)
	}
	nothing, _ := set.Get("nothing")
	if nothing.Allowed == nil || len(nothing.Allowed) != 0 {
		t.Errorf("allowed = [] must stay empty, got %#v", nothing.Allowed)
	}
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	set := loadLayers(t, map[string]string{
		"shared.toml":  "[role]\ndescription = \"from xdg\"\n",
		"xdgonly.toml": "[role]\ndescription = \"xdg only\"\n",
	}, map[string]string{
		"shared.toml": "[role]\ndescription = \"from home\"\n",
		// The user may adjust a built-in on their own machine.
		"coder.toml": "[role]\ndescription = \"my coder\"\n",
	}, map[string]string{
		"ours.toml": "[role]\ndescription = \"from project\"\n",
	})
	for name, want := range map[string]string{"shared": "from home", "xdgonly": "xdg only", "coder": "my coder", "ours": "from project"} {
		r, _ := set.Get(name)
		if r.Description != want {
			t.Errorf("%s: description %q, want %q", name, r.Description, want)
		}
	}
	if r, _ := set.Get("ours"); r.Source != SourceProject {
		t.Errorf("ours source %s", r.Source)
	}
	if r, _ := set.Get("coder"); r.Source != SourceUser {
		t.Errorf("coder source %s", r.Source)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		want  []string // substrings, one per expected error, in order
	}{
		{
			name:  "built-in name in a project",
			files: map[string]string{"reviewer.toml": "[role]\n[tools]\nallowed = [\"*\"]\n"},
			want:  []string{`reviewer.toml:1:1: role "reviewer" is already defined by builtin:reviewer.toml (built-in): a project may only add roles`},
		},
		{
			name: "cycle, reported once with its chain",
			files: map[string]string{
				"a.toml": "[role]\ninherits = \"b\"\n",
				"b.toml": "[role]\ninherits = \"c\"\n",
				"c.toml": "[role]\ninherits = \"a\"\n",
			},
			want: []string{`a.toml:2:1: role "a": inheritance cycle a → b → c → a`},
		},
		{
			name:  "self inheritance",
			files: map[string]string{"me.toml": "[role]\ninherits = \"me\"\n"},
			want:  []string{`me.toml:2:1: role "me": inheritance cycle me → me`},
		},
		{
			name: "missing parent, with the longest chain",
			files: map[string]string{
				"child.toml":  "[role]\ninherits = \"middle\"\n",
				"middle.toml": "[role]\ninherits = \"reviwer\"\n",
			},
			want: []string{`middle.toml:2:1: role "middle" inherits "reviwer", which does not exist (child → middle → reviwer); did you mean "reviewer"?`},
		},
		{
			name:  "warns above where it blocks, in one file",
			files: map[string]string{"w.toml": "[limits]\nwarn_at_percent = 90\nblock_at_percent = 50\n"},
			want:  []string{`w.toml:2:1: limits.warn_at_percent 90 is above limits.block_at_percent 50: the role would block before it warns, so its warning could never show`},
		},
		{
			name:  "blocks below the warning it inherits",
			files: map[string]string{"b.toml": "[role]\ninherits = \"coder\"\n[limits]\nblock_at_percent = 50\n"},
			want:  []string{`b.toml:4:1: limits.warn_at_percent 80 (inherited from coder) is above limits.block_at_percent 50: the role would block before it warns`},
		},
		{
			name: "warns above the block it inherits, reported where it is set only",
			files: map[string]string{
				"p.toml": "[limits]\nblock_at_percent = 60\nwarn_at_percent = 50\n",
				"w.toml": "[role]\ninherits = \"p\"\n[limits]\nwarn_at_percent = 70\n",
				"c.toml": "[role]\ninherits = \"w\"\n", // sets neither: its parent's error is the one
			},
			want: []string{`w.toml:4:1: limits.warn_at_percent 70 is above limits.block_at_percent 60 (inherited from p): the role would block before it warns`},
		},
		{
			name: "every file's errors together, sorted",
			files: map[string]string{
				"z.toml": "[limits]\nmax_shell = 1\n",
				"a.toml": "[role]\nshell_policy = \"never\"\n[tools]\ndenied = \"ctx_edit\"\n",
			},
			want: []string{
				`a.toml:2:1: role.shell_policy: unknown shell_policy "never"`,
				`a.toml:4:1: tools.denied: want an array of tool names or patterns, got string "ctx_edit"`,
				`z.toml:2:1: unknown key "max_shell" in [limits]`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			project := filepath.Join(t.TempDir(), ProjectRolesDir)
			writeRoles(t, project, tt.files)
			_, err := Load(Dirs{Project: []string{project}})
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			if len(list) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(list), len(tt.want), err)
			}
			for i, w := range tt.want {
				if got := strings.TrimPrefix(list[i].Error(), project+string(filepath.Separator)); !strings.HasPrefix(got, w) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, got, w)
				}
			}
		})
	}
}

// A user's role that inherits its own name starts from the definition it
// replaces: an adjustment of a built-in, or of a role of a lower user
// directory. (A project's may not: see TestProjectOnlyAdds.)
func TestRoleAdjustsTheOneItReplaces(t *testing.T) {
	t.Parallel()
	set := loadLayers(t, map[string]string{
		"team.toml": "[role]\ndescription = \"base\"\n[tools]\nallowed = [\"ctx_read\"]\n",
	}, map[string]string{
		"reviewer.toml": "[role]\ninherits = \"reviewer\"\n[limits]\nmax_context_tokens = 1000\n",
		"team.toml":     "[role]\ninherits = \"team\"\ndescription = \"adjusted\"\n[limits]\nmax_shell_invocations = 7\n",
	}, nil)
	builtin, _ := LoadDefs()
	want, _ := builtin.Get("reviewer")
	r, _ := set.Get("reviewer")
	if r.Limits.MaxContextTokens != 1000 || !slices.Equal(r.Allowed, want.Allowed) || !slices.Equal(r.Denied, want.Denied) ||
		r.Source != SourceUser || r.Origin["tools.allowed"] != "builtin:reviewer.toml" {
		t.Errorf("reviewer: %+v", r)
	}
	if len(r.Chain) != 2 || r.Chain[1] != "reviewer (builtin:reviewer.toml)" {
		t.Errorf("reviewer's chain %v", r.Chain)
	}
	team, _ := set.Get("team")
	if team.Description != "adjusted" || !slices.Equal(team.Allowed, []string{"ctx_read"}) || team.Limits.MaxShellInvocations != 7 || len(team.Chain) != 2 {
		t.Errorf("team: %+v", team)
	}
	if got := set.Names(); !slices.Equal(got, []string{"admin", "coder", "debugger", "ops", "reviewer", "team"}) {
		t.Errorf("roles %v", got)
	}
}

// loadLayers writes role files to an XDG data directory, the user's
// ~/.lean-ctx/roles and a project's, and loads them.
func loadLayers(t *testing.T, xdgFiles, homeFiles, projectFiles map[string]string) *Set {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home", ".lean-ctx", "roles")
	xdg := filepath.Join(dir, "xdg", "lean-ctx", "roles")
	project := filepath.Join(dir, "proj", ProjectRolesDir)
	writeRoles(t, xdg, xdgFiles)
	writeRoles(t, home, homeFiles)
	writeRoles(t, project, projectFiles)
	set, err := Load(Dirs{Project: []string{project}, User: []string{home, xdg}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// Layers only add: a project file may not take a name that a user file or
// a built-in already has, and the error names both files. The user keeps
// the freedom to redefine a built-in or a role of a lower user directory.
func TestProjectOnlyAdds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		xdg, home, project    map[string]string
		want                  []string // errors, with the directories as "XDG", "HOME", "PROJECT"
		role                  string   // with no errors: a role to look at
		wantFile              string
		wantTokens, wantShell int64
	}{
		{
			name:    "a project raising a user role's limits",
			home:    map[string]string{"tiny.toml": "[role]\ninherits = \"reviewer\"\n[limits]\nmax_shell_invocations = 1\n"},
			project: map[string]string{"tiny.toml": "# raise it\n[role]\ninherits = \"tiny\"\n[limits]\nmax_shell_invocations = 1000000\n"},
			want:    []string{`PROJECT/tiny.toml:2:1: role "tiny" is already defined by HOME/tiny.toml (user): a project may only add roles (rename it, and use inherits = "tiny" to start from it)`},
		},
		{
			name:    "a project replacing a user role outright, no [role] table",
			xdg:     map[string]string{"tiny.toml": "[role]\ndescription = \"mine\"\n"},
			project: map[string]string{"tiny.toml": "\n[limits]\nmax_context_tokens = 9\n"},
			want:    []string{`PROJECT/tiny.toml:2:1: role "tiny" is already defined by XDG/tiny.toml (user): a project may only add roles`},
		},
		{
			name:    "a user role starting from a project's",
			home:    map[string]string{"team.toml": "[role]\ninherits = \"helper\"\n", "lead.toml": "[role]\ninherits = \"team\"\n"},
			project: map[string]string{"helper.toml": "[role]\ninherits = \"reviewer\"\n"},
			want:    []string{`HOME/team.toml:2:1: role "team" (user) inherits "helper", which the project defines: a role of the user's may not start from a project's, whose files the agent can change (copy what it needs into the user's file)`},
		},
		{
			name:    "a project adjusting a built-in",
			project: map[string]string{"reviewer.toml": "[role]\ninherits = \"reviewer\"\n[limits]\nmax_context_tokens = 1\n"},
			want:    []string{`PROJECT/reviewer.toml:1:1: role "reviewer" is already defined by builtin:reviewer.toml (built-in): a project may only add roles (rename it, and use inherits = "reviewer" to start from it)`},
		},
		{
			name:    "a project redefining a built-in the user adjusted",
			home:    map[string]string{"coder.toml": "[role]\ninherits = \"coder\"\n"},
			project: map[string]string{"coder.toml": "[role]\n"},
			want:    []string{`PROJECT/coder.toml:1:1: role "coder" is already defined by HOME/coder.toml (user)`},
		},
		{
			name:    "a broken project file is still held to the rule",
			home:    map[string]string{"tiny.toml": "[role]\n"},
			project: map[string]string{"tiny.toml": "[role]\ninherits = \"tiny\"\n[limits]\nmax_shell_invocations = \"lots\"\n"},
			want: []string{
				`PROJECT/tiny.toml:1:1: role "tiny" is already defined by HOME/tiny.toml (user)`,
				`PROJECT/tiny.toml:4:1: limits.max_shell_invocations: want a whole number`,
			},
		},
		{
			name:    "a project role inheriting its own new name is a cycle",
			project: map[string]string{"mine.toml": "[role]\ninherits = \"mine\"\n"},
			want:    []string{`PROJECT/mine.toml:2:1: role "mine": inheritance cycle mine → mine`},
		},
		{
			name:       "a project adds a role that starts from a user's",
			home:       map[string]string{"tiny.toml": "[role]\ninherits = \"reviewer\"\n[limits]\nmax_shell_invocations = 1\n"},
			project:    map[string]string{"tinier.toml": "[role]\ninherits = \"tiny\"\n[limits]\nmax_context_tokens = 5\n"},
			role:       "tinier",
			wantFile:   "PROJECT/tinier.toml",
			wantTokens: 5, wantShell: 1,
		},
		{
			name:       "a user file adjusts a role of a lower user directory",
			xdg:        map[string]string{"tiny.toml": "[role]\ninherits = \"reviewer\"\n[limits]\nmax_shell_invocations = 1\n"},
			home:       map[string]string{"tiny.toml": "[role]\ninherits = \"tiny\"\n[limits]\nmax_context_tokens = 7\n"},
			role:       "tiny",
			wantFile:   "HOME/tiny.toml",
			wantTokens: 7, wantShell: 1,
		},
		{
			name:       "a user file redefines a built-in",
			home:       map[string]string{"reviewer.toml": "[role]\n[limits]\nmax_context_tokens = 3\n"},
			role:       "reviewer",
			wantFile:   "HOME/reviewer.toml",
			wantTokens: 3, wantShell: 100,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			xdg := filepath.Join(dir, "xdg", "lean-ctx", "roles")
			home := filepath.Join(dir, "home", ".lean-ctx", "roles")
			project := filepath.Join(dir, "proj", ProjectRolesDir)
			writeRoles(t, xdg, tt.xdg)
			writeRoles(t, home, tt.home)
			writeRoles(t, project, tt.project)
			name := strings.NewReplacer(xdg, "XDG", home, "HOME", project, "PROJECT").Replace
			set, err := Load(Dirs{Project: []string{project}, User: []string{home, xdg}})
			if len(tt.want) > 0 {
				var list ErrorList
				if !errors.As(err, &list) || len(list) != len(tt.want) {
					t.Fatalf("want %d errors, got %v", len(tt.want), err)
				}
				for i, w := range tt.want {
					if got := name(list[i].Error()); !strings.HasPrefix(got, w) {
						t.Errorf("error %d:\n got %s\nwant %s...", i, got, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, ok := set.Get(tt.role)
			if !ok || name(r.File) != tt.wantFile || r.Limits.MaxContextTokens != tt.wantTokens || r.Limits.MaxShellInvocations != tt.wantShell {
				t.Errorf("%s: %+v", tt.role, r)
			}
		})
	}
}

// leaks reports whether s shows any 8 bytes of secret.
func leaks(s, secret string) bool {
	for i := 0; i+8 <= len(secret); i++ {
		if strings.Contains(s, secret[i:i+8]) {
			return true
		}
	}
	return false
}

// A project's role file, or roles directory, that links out of the
// project is refused, naming the link and nothing of its target; the
// user's may link anywhere.
func TestProjectFilesStayInside(t *testing.T) {
	t.Parallel()
	const secret = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	writeRoles(t, outside, map[string]string{
		"credentials.toml": "[default]\naws_secret_access_key = " + secret + "\n",
		"mine.toml":        "[role]\ndescription = \"kept in my dotfiles\"\n",
	})
	root := filepath.Join(dir, "repo")
	project := filepath.Join(root, ProjectRolesDir)
	home := filepath.Join(dir, "home", ".lean-ctx", "roles")
	writeRoles(t, project, map[string]string{"ok.toml": "[role]\n"})
	writeRoles(t, home, nil)
	for link, target := range map[string]string{
		filepath.Join(project, "leak.toml"): filepath.Join(outside, "credentials.toml"),
		filepath.Join(home, "mine.toml"):    filepath.Join(outside, "mine.toml"),
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(Dirs{Root: root, Project: []string{project}, User: []string{home}})
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].File != filepath.Join(project, "leak.toml") ||
		!strings.Contains(list[0].Msg, "refused: a symbolic link that leads out of") || leaks(err.Error(), secret) || strings.Contains(err.Error(), "credentials") {
		t.Fatalf("a project role file linking out: %v", err)
	}
	os.Remove(filepath.Join(project, "leak.toml"))
	set, err := Load(Dirs{Root: root, Project: []string{project}, User: []string{home}})
	if r, ok := set.Get("mine"); err != nil || !ok || r.Description != "kept in my dotfiles" {
		t.Errorf("a user's role file may be a link: %v", err)
	}

	// A roles directory that is a link out of the project.
	os.RemoveAll(project)
	if err := os.Symlink(outside, project); err != nil {
		t.Fatal(err)
	}
	_, err = Load(Dirs{Root: root, Project: []string{project}})
	if !errors.As(err, &list) || len(list) != 1 || list[0].File != project || leaks(err.Error(), secret) {
		t.Errorf("a project roles directory linking out: %v", err)
	}
}

// [tools] ask is a list of patterns like allowed and denied: strict,
// inherited on its own, with the file that set it; a role that leaves it
// out and has no parent asks for nothing.
func TestAskList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeRoles(t, dir, map[string]string{
		"careful.toml":       "[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_shell\", \"mcp__github__*\"]\n",
		"careful-tight.toml": "[role]\ninherits = \"careful\"\n[tools]\ndenied = [\"ctx_edit\"]\n",
		"bad.toml":           "[tools]\nask = \"ctx_shell\"\n",
		"bad-item.toml":      "[tools]\nask = [\"ctx shell\"]\n",
	})
	_, err := Load(Dirs{User: []string{dir}})
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 || !strings.Contains(list[0].Error(), "tools.ask") || !strings.Contains(list[1].Error(), "tools.ask") {
		t.Fatalf("errors: %v", err)
	}
	os.Remove(filepath.Join(dir, "bad.toml"))
	os.Remove(filepath.Join(dir, "bad-item.toml"))
	set, err := Load(Dirs{User: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := set.Get("careful-tight")
	if !slices.Equal(ct.Ask, []string{"ctx_shell", "mcp__github__*"}) || !slices.Equal(ct.Denied, []string{"ctx_edit"}) ||
		ct.Origin["tools.ask"] != filepath.Join(dir, "careful.toml") {
		t.Errorf("careful-tight: ask %v denied %v, ask set by %q", ct.Ask, ct.Denied, ct.Origin["tools.ask"])
	}
	coder, _ := set.Get("coder")
	if coder.Ask == nil || len(coder.Ask) != 0 || coder.Origin["tools.ask"] != "default" {
		t.Errorf("coder asks %#v (%s)", coder.Ask, coder.Origin["tools.ask"])
	}
}
