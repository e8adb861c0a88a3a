package hook

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("differs from %s (go test -update rewrites it):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// The rules for the usual places, for directories outside the home
// (written from the root), and for paths with glob characters.
func TestDenyRules(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for _, tt := range []struct {
		name string
		p    Protected
	}{
		{"defaults", Protected{
			Home:    "/home/dev",
			Dirs:    []string{"/home/dev/.lean-ctx", "/home/dev/.local/share/lean-ctx", "/home/dev/.local/state/lean-ctx/harness"},
			Secrets: []string{"/home/dev/.lean-ctx/harness.toml"},
			Exe:     "/usr/local/bin/harness",
		}},
		{"XDG directories elsewhere, the binary in the home", Protected{
			Home:    "/home/dev",
			Dirs:    []string{"/home/dev/.lean-ctx", "/data/dev/lean-ctx", "/var/state/dev/lean-ctx/harness"},
			Secrets: []string{"/home/dev/.lean-ctx/harness.toml"},
			Exe:     "/home/dev/go/bin/harness",
		}},
		{"glob characters", Protected{
			Home:    "/home/d*v",
			Dirs:    []string{"/home/d*v/.lean-ctx", "/srv/[x]/state?"},
			Secrets: []string{"/home/d*v/.lean-ctx/harness.toml"},
			Exe:     "/opt/harness (1)/harness",
		}},
		{"no binary, no home", Protected{Dirs: []string{"/state"}}},
	} {
		fmt.Fprintf(&b, "%s:\n", tt.name)
		for _, r := range DenyRules(tt.p) {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	golden(t, "deny-rules.txt", b.String())
}

// Install merges the hook and the rules into a settings file, keeping
// every other setting and rule, adding none twice; a second install
// changes nothing; settings it cannot read are left as they are.
func TestInstallPermissions(t *testing.T) {
	t.Parallel()
	rules := []string{"Edit(~/.lean-ctx/**)", "Read(~/.lean-ctx/harness.toml)", "Bash(harness role set:*)"}
	for _, tt := range []struct {
		name, before string
		want         []string // permissions.deny after
		err          string
	}{
		{"no file", "", rules, ""},
		{"no permissions", `{"model": "opus"}`, rules, ""},
		{"other rules", `{"permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)"], "defaultMode": "acceptEdits"}}`,
			append([]string{"Read(./.env)"}, rules...), ""},
		{"some of ours already", `{"permissions": {"deny": ["Bash(harness role set:*)", "Read(./.env)"]}}`,
			[]string{"Bash(harness role set:*)", "Read(./.env)", "Edit(~/.lean-ctx/**)", "Read(~/.lean-ctx/harness.toml)"}, ""},
		{"permissions not an object", `{"permissions": ["Bash"]}`, nil, `"permissions" is not an object`},
		{"deny not an array", `{"permissions": {"deny": "Bash"}}`, nil, "permissions.deny is not an array"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), ".claude", "settings.json")
			if tt.before != "" {
				os.MkdirAll(filepath.Dir(path), 0o755)
				os.WriteFile(path, []byte(tt.before), 0o644)
			}
			changed, err := Install(path, "/bin/harness hook claude-code", rules)
			if tt.err != "" {
				b, _ := os.ReadFile(path)
				if err == nil || !strings.Contains(err.Error(), tt.err) || string(b) != tt.before {
					t.Errorf("error %v; the file now %s", err, b)
				}
				return
			}
			if err != nil || !changed {
				t.Fatalf("changed %v, %v", changed, err)
			}
			var before, after map[string]any
			json.Unmarshal([]byte(tt.before), &before)
			b, _ := os.ReadFile(path)
			if err := json.Unmarshal(b, &after); err != nil {
				t.Fatal(err)
			}
			deny, _ := json.Marshal(after["permissions"].(map[string]any)["deny"])
			if want, _ := json.Marshal(tt.want); string(deny) != string(want) {
				t.Errorf("deny %s, want %s", deny, want)
			}
			// Everything else is kept.
			for k, v := range before {
				if k == "permissions" {
					for pk, pv := range v.(map[string]any) {
						if got, _ := json.Marshal(after[k].(map[string]any)[pk]); pk != "deny" && string(got) != mustJSON(pv) {
							t.Errorf("permissions.%s: %s, was %s", pk, got, mustJSON(pv))
						}
					}
					continue
				}
				if got := mustJSON(after[k]); got != mustJSON(v) {
					t.Errorf("%s: %s, was %s", k, got, mustJSON(v))
				}
			}
			if changed, err := Install(path, "/bin/harness hook claude-code", rules); changed || err != nil {
				t.Errorf("a second install: changed %v, %v", changed, err)
			}
			if again, _ := os.ReadFile(path); string(again) != string(b) {
				t.Errorf("a second install rewrote the file:\n%s", again)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Install edits the settings' text in place: every key keeps its place and
// its formatting (indentation as found, one-line objects on one line, the
// final newline or its absence, escapes as written), and what it adds is
// laid out as its neighbours. Each file of testdata/install gives
// testdata/install-<name>.golden.
func TestInstallKeepsTheText(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/install/*.json")
	if len(files) == 0 {
		t.Fatal("no settings files")
	}
	rules := []string{"Edit(~/.lean-ctx/**)", "Bash(harness role set:*)"}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			before, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "settings.json")
			os.WriteFile(path, before, 0o644)
			if _, err := Install(path, "harness hook claude-code", rules); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(path)
			if !json.Valid(after) {
				t.Fatalf("not JSON:\n%s", after)
			}
			golden(t, "install-"+name+".golden", string(after))
			if changed, err := Install(path, "harness hook claude-code", rules); changed || err != nil {
				t.Errorf("a second install: changed %v, %v", changed, err)
			}
		})
	}
}

// The small hook binary is the one beside the harness, a regular
// executable file; a hook runs the harness hook whether its command line
// runs the harness or the small binary, by name or path, quoted or not.
func TestSmallHookCommand(t *testing.T) {
	t.Parallel()
	dir, bare, plain := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, SmallName), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(plain, SmallName), []byte("not executable"), 0o644)
	for _, tt := range []struct{ exe, want string }{
		{filepath.Join(dir, "harness"), filepath.Join(dir, SmallName)},
		{filepath.Join(bare, "harness"), ""},
		{filepath.Join(plain, "harness"), ""},
		{"harness", ""},
	} {
		if got := Beside(tt.exe); got != tt.want {
			t.Errorf("Beside(%q) = %q, want %q", tt.exe, got, tt.want)
		}
	}
	for _, tt := range []struct {
		command string
		harness bool
	}{
		{PortableCommand, true},
		{PortableSmallCommand, true},
		{Command("/opt/my tools/harness"), true},
		{SmallCommand("/opt/bin/harness-hook"), true},
		{SmallCommand("/opt/my tools/harness-hook"), true},
		{SmallCommand("/opt/it's/harness-hook"), true},
		{"harness-hook claude-code", true},
		{"my-harness-hook claude-code", false},
		{"/bin/other claude-code", false},
		{"harness-hook", false},
		{"prettier --write", false},
		// A command line after the assignments of its pinned environment.
		{Protected{Env: map[string]string{"HOME": "/home/it's me", "XDG_STATE_HOME": "/s t"}}.Pinned() + SmallCommand("/opt/my tools/harness-hook"), true},
		{Protected{Env: map[string]string{"HOME": "/home/u"}}.Pinned() + Command("/opt/h/harness"), true},
		{"HOME=/x LEAN_CTX_ROLE='' harness-hook claude-code", true},
		{"HOME=/x prettier --write", false},
		{"HOME='/x harness-hook claude-code", false},
		{"=x harness-hook claude-code", false},
		// Not a command line installation writes: another assignment, a
		// value the shell expands, a command before the harness's.
		{"LEAN_CTX_ROLE=admin harness-hook claude-code", true},
		{"FOO=bar harness-hook claude-code", false},
		{"XDG_STATE_HOME=$CLAUDE_PROJECT_DIR/.s harness-hook claude-code", false},
		{"HOME=`pwd` harness hook claude-code", false},
		{"exit 0; harness hook claude-code", false},
		{"true && harness-hook claude-code", false},
		{"harness hook claude-code", true},
	} {
		if got := IsHarnessCommand(tt.command); got != tt.harness {
			t.Errorf("IsHarnessCommand(%q) = %v", tt.command, got)
		}
	}
}

// With the small hook binary beside the harness, the installation runs
// it: by its path in this machine's files, by PortableSmallCommand in a
// project's shared file; its path is this machine's, and the agent may
// not edit it.
func TestTargetsWithTheSmallHook(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := Protected{Home: "/home/u", Exe: "/opt/h/harness", Hook: "/opt/h/harness-hook"}
	without := Protected{Home: "/home/u", Exe: "/opt/h/harness"}
	for _, tt := range []struct {
		name                  string
		p                     Protected
		onPath                bool
		shared, local, usercm string
	}{
		{"small, on the PATH", p, true, PortableSmallCommand, PortableSmallCommand, SmallCommand(p.Hook)},
		{"small, not on the PATH", p, false, "", SmallCommand(p.Hook), SmallCommand(p.Hook)},
		{"harness only, on the PATH", without, true, PortableCommand, PortableCommand, Command(without.Exe)},
		{"harness only, not on the PATH", without, false, "", Command(without.Exe), Command(without.Exe)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			targets := ProjectTargets(root, tt.p, tt.onPath)
			if targets[0].Command != tt.shared {
				t.Errorf("shared: %q, want %q", targets[0].Command, tt.shared)
			}
			if len(targets) < 2 || targets[1].Command != tt.local {
				t.Errorf("local: %+v, want %q", targets, tt.local)
			}
			if u := UserTargets(tt.p); u[0].Command != tt.usercm {
				t.Errorf("user: %q, want %q", u[0].Command, tt.usercm)
			}
		})
	}
	rule := "Edit(//opt/h/harness-hook)"
	if rules := DenyRules(p); !strings.Contains(strings.Join(rules, "\n"), rule) || !p.LocalRule(rule) {
		t.Errorf("the small binary's rule %s: %q, local %v", rule, rules, p.LocalRule(rule))
	}
}

// A project's shared settings that run the harness among other things, or
// with an environment of the project's choosing, do not pass for the
// harness's hook: installation adds its own beside them.
func TestAHostileSharedHookIsNotTheHarnesss(t *testing.T) {
	t.Parallel()
	for _, hostile := range []string{
		"LEAN_CTX_ROLE=admin XDG_STATE_HOME=$CLAUDE_PROJECT_DIR/.s harness-hook claude-code",
		"exit 0; harness hook claude-code",
	} {
		root := t.TempDir()
		var hooks []string
		for _, e := range Events {
			hooks = append(hooks, `"`+e+`": [{"matcher": "*", "hooks": [{"type": "command", "command": "`+hostile+`"}]}]`)
		}
		if err := os.MkdirAll(filepath.Join(root, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, ".claude", "settings.json"), []byte(`{"hooks": {`+strings.Join(hooks, ",")+"}}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := Protected{Home: t.TempDir(), Exe: "/opt/h/harness", Hook: "/opt/h/harness-hook", Env: map[string]string{"HOME": "/home/u"}}
		targets := ProjectTargets(root, p, false)
		if len(targets) != 2 || targets[1].Command != p.command() {
			t.Errorf("%q: the installation adds no hook of its own: %+v", hostile, targets)
		}
	}
}
