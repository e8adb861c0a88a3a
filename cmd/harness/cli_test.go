package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/app"
)

// commandPaths are the paths of every command a user may run, the root's
// ("") first: those that help lists (not cobra's completion scripts).
func commandPaths() []string {
	var paths []string
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		paths = append(paths, strings.Join(path, " "))
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() && sub.Name() != "completion" {
				walk(sub, append(path, sub.Name()))
			}
		}
	}
	c := &cli{env: env{getenv: func(string) string { return "" }}}
	root := c.command()
	root.InitDefaultHelpCmd()
	walk(root, nil)
	return paths
}

// Every command has help: a description, its usage with its arguments,
// its flags with their defaults, and examples; on stdout with exit 0,
// the same from COMMAND --help, COMMAND -h and help COMMAND.
func TestHelp(t *testing.T) {
	t.Parallel()
	paths := commandPaths()
	if len(paths) < 20 {
		t.Fatalf("only %d commands: %v", len(paths), paths)
	}
	for _, path := range paths {
		args := strings.Fields(path)
		file := "help/" + strings.Join(append([]string{"harness"}, args...), "-") + ".txt"
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := harness(t, nil, append(args, "--help")...)
			if code != exitOK || errOut != "" {
				t.Fatalf("--help: exit %d\n%s", code, errOut)
			}
			golden(t, file, out)
			for _, other := range [][]string{append(args, "-h"), append([]string{"help"}, args...)} {
				if o, e, code := harness(t, nil, other...); code != exitOK || o != out || e != "" {
					t.Errorf("%v: exit %d, and not the same as --help:\n%s%s", other, code, o, e)
				}
			}
			for _, want := range []string{"Usage:\n  harness", "Flags:\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("help lacks %q", want)
				}
			}
			if !strings.Contains(out, "Examples:\n  ") {
				t.Error("help has no examples")
			}
		})
	}
	// A golden file of a command that is no more is a mistake too.
	files, _ := filepath.Glob("testdata/help/*.txt")
	if len(files) != len(paths) {
		t.Errorf("%d help golden files for %d commands", len(files), len(paths))
	}
}

// harness version and harness --version print how the binary was built.
func TestVersion(t *testing.T) {
	t.Parallel()
	b := app.Build{Version: "v1.2.0", Module: "github.com/agentharness/harness", Revision: "0123abc", Time: "2026-12-01T12:00:00Z",
		Modified: true, GoVersion: "go1.26.0", Platform: "linux/amd64", OPAVersion: "v1.22.4"}
	run := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := runEnv(args, &out, &errb, env{getenv: func(string) string { return "" }, build: func() app.Build { return b }})
		if errb.Len() > 0 {
			t.Errorf("%v: stderr %s", args, errb.String())
		}
		return out.String(), code
	}
	out, code := run("version")
	want := "Version: v1.2.0\nCommit: 0123abc (modified)\nCommit Time: 2026-12-01T12:00:00Z\nGo Version: go1.26.0\nPlatform: linux/amd64\nOPA Version: v1.22.4\n"
	if code != exitOK || out != want {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	if out, code := run("--version"); code != exitOK || out != want {
		t.Errorf("--version: exit %d\n%s", code, out)
	}
	out, _ = run("version", "--json")
	var got app.Build
	if err := json.Unmarshal([]byte(out), &got); err != nil || got != b {
		t.Errorf("version --json: %v\n%s", err, out)
	}
	// This test binary's own build: the harness's version, Go's.
	if out, _, code := harness(t, nil, "version"); code != exitOK || !strings.HasPrefix(out, "Version: ") || !strings.Contains(out, "Go Version: go1.") {
		t.Errorf("version of this build: exit %d\n%s", code, out)
	}
}

// Mistakes on the command line are usage errors (exit 1) that say what is
// wrong, suggest what is close, and say where the usage is.
func TestCommandLineMistakes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string // the whole of stderr
	}{
		{[]string{"decid", "--tool", "x"}, "harness: unknown command \"decid\" (did you mean decide?)\nRun 'harness --help' for usage.\n"},
		{[]string{"--version2"}, "harness: unknown flag --version2 (did you mean --version?)\nRun 'harness --help' for usage.\n"},
		{[]string{"decide", "--tol", "x"}, "harness: decide: unknown flag --tol (did you mean --tool?)\nRun 'harness decide --help' for usage.\n"},
		{[]string{"decide", "-tool", "x"}, "harness: decide: unknown flag -tool (did you mean --tool?)\nRun 'harness decide --help' for usage.\n"},
		{[]string{"decide", "--tool", "x", "--trace=bogus"},
			"harness: decide: --trace \"bogus\": want one of full, notes, fails, debug\nRun 'harness decide --help' for usage.\n"},
		{[]string{"decide", "--tool"}, "harness: decide: --tool needs a value\nRun 'harness decide --help' for usage.\n"},
		{[]string{"log", "--limit", "ten"}, "harness: log: --limit \"ten\": must be an integer\nRun 'harness log --help' for usage.\n"},
		{[]string{"log", "--limit", "-1"}, "harness: log: --limit -1: want a whole number >= 0 (0: all)\n"},
		{[]string{"roles", "lst"}, "harness: roles: unknown subcommand \"lst\" (did you mean list?): want list, or show NAME\nRun 'harness roles --help' for usage.\n"},
		{[]string{"roles"}, "harness: roles: want a subcommand: list, or show NAME\nRun 'harness roles --help' for usage.\n"},
		{[]string{"budget", "rest", "--session", "s"}, "harness: budget: unknown subcommand \"rest\" (did you mean reset?): want budget --session S, budget reset --session S, or budget reset --agent A --agent-budget\nRun 'harness budget --help' for usage.\n"},
		{[]string{"role", "swtch", "coder"}, "harness: role: unknown subcommand \"swtch\" (did you mean switch?): want role, role set NAME, or role switch NAME\nRun 'harness role --help' for usage.\n"},
		{[]string{"help", "decid"}, "harness: unknown command \"decid\" (did you mean decide?)\nRun 'harness --help' for usage.\n"},
		{[]string{"help", "roles", "sho"}, "harness: roles: unknown subcommand \"sho\" (did you mean show?)\nRun 'harness roles --help' for usage.\n"},
		{[]string{"test", "--format", "tap"}, "harness: test: --format \"tap\": want one of pretty, json, junit, github\n"},
		{[]string{"compress", "--json"}, "harness: compress: --json goes with --stats\n"},
		{[]string{"hook"}, "harness: hook: want a subcommand: claude-code (the hook itself), or install\nRun 'harness hook --help' for usage.\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			out, errOut, code := harness(t, nil, tt.args...)
			if code != exitError || errOut != tt.want || out != "" {
				t.Errorf("exit %d\n--- stderr\n%s--- want\n%s--- stdout\n%s", code, errOut, tt.want, out)
			}
		})
	}
}

// The global flags may come before the command: --project, and --ledger
// for the commands that take it.
func TestGlobalFlagsFirst(t *testing.T) {
	t.Parallel()
	after, _, _ := harness(t, nil, "roles", "list", "--project", auditor)
	before, errOut, code := harness(t, nil, "--project", auditor, "roles", "list")
	if code != exitOK || before != after || !strings.Contains(before, "security-auditor") {
		t.Errorf("--project before the command: exit %d\n%s%s", code, before, errOut)
	}
	home := t.TempDir()
	ledger := "sqlite:" + filepath.Join(home, "elsewhere.db")
	if _, errOut, code := harnessIn(t, home, nil, "--ledger", ledger, "decide", "--session", "s-1", "--tool", "ctx_read"); code != exitOK {
		t.Fatalf("--ledger before decide: exit %d\n%s", code, errOut)
	}
	out, errOut, code := harnessIn(t, home, nil, "--ledger", ledger, "--project", auditor, "budget", "--session", "s-1")
	if code != exitOK || !strings.HasPrefix(out, "Budget[coder]") {
		t.Errorf("--ledger before budget: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := harness(t, nil, "--ledger", ledger, "roles", "list"); code != exitError || !strings.Contains(errOut, "roles list: unknown flag --ledger") {
		t.Errorf("--ledger where it does not apply: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "lean-ctx", "harness", "ledger.db")); err == nil {
		t.Error("the default ledger was used")
	}
}

// Shell completion: the scripts of bash, zsh and fish, and completions of
// commands, role names and flag values.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{"bash": "# bash completion V2 for harness", "zsh": "#compdef harness", "fish": "complete -c harness"} {
		out, errOut, code := harness(t, nil, "completion", shell)
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, no %q\n%s", shell, code, want, errOut)
		}
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "ro"}, []string{"role\t", "roles\t"}},
		{[]string{"__complete", "roles", "show", ""}, []string{"reviewer\tbuilt-in: Read-only access for code review", "security-auditor\tproject: Security-focused code review"}},
		{[]string{"__complete", "role", "set", ""}, []string{"admin\t"}},
		{[]string{"__complete", "events", "--type", ""}, []string{"BudgetReset"}},
		{[]string{"__complete", "test", "--format", ""}, []string{"junit", "github"}},
		{[]string{"__complete", "decide", "--trace="}, []string{"notes\n"}},
	} {
		out, _, code := harness(t, nil, append([]string{"__complete", "--project", auditor}, tt.args[1:]...)...)
		for _, w := range tt.want {
			if code != exitOK || !strings.Contains(out, w) {
				t.Errorf("%v: exit %d, no %q\n%s", tt.args, code, w, out)
			}
		}
	}
}

// Every command that lists or shows something has --json.
func TestJSONEverywhere(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	bundle := filepath.Join(home, "bundle")
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[agents.ci.budget]\nmax_shell_invocations = 10\n")
	if _, errOut, code := harnessIn(t, home, nil, "decide", "--tool", "ctx_shell", "--session", "s-1", "--agent", "ci", "--record"); code != 0 {
		t.Fatal(errOut)
	}
	tests := []struct {
		args []string
		code int
		keys []string // keys of the JSON object, or of the first element of a list
	}{
		{[]string{"roles", "list", "--json"}, 0, []string{"name", "source", "chain", "origin"}},
		{[]string{"check", "--json"}, 0, []string{"ok", "errors", "roles", "configuration", "mode"}},
		{[]string{"check", "--json", "--project", broken}, 3, []string{"ok", "errors"}},
		{[]string{"role", "--session", "s-1", "--json"}, 0, []string{"session", "agent", "role", "targets", "status", "status_line"}},
		{[]string{"role", "switch", "reviewer", "--session", "s-1", "--json"}, 0, []string{"session", "switched", "decision", "status_line"}},
		{[]string{"role", "switch", "admin", "--session", "s-1", "--json"}, 2, []string{"switched", "decision"}},
		{[]string{"compile", "--out", bundle, "--json"}, 0, []string{"out", "roles", "modules"}},
		{[]string{"budget", "reset", "--session", "s-1", "--json"}, 0, []string{"session", "role", "budget", "status_line", "reset"}},
		{[]string{"budget", "reset", "--agent", "ci", "--agent-budget", "--json"}, 0, []string{"agent", "period", "reset"}},
		{[]string{"version", "--json"}, 0, []string{"version", "go_version", "platform"}},
	}
	for _, tt := range tests {
		out, errOut, code := harnessIn(t, home, nil, tt.args...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); code != tt.code || err != nil {
			t.Errorf("%v: exit %d, %v\n%s%s", tt.args, code, err, out, errOut)
			continue
		}
		if list, ok := v.([]any); ok && len(list) > 0 {
			v = list[0]
		}
		obj, _ := v.(map[string]any)
		for _, k := range tt.keys {
			if _, ok := obj[k]; !ok {
				t.Errorf("%v: no %q in\n%s", tt.args, k, out)
			}
		}
	}
	out, _, _ := harness(t, nil, "check", "--json", "--project", broken)
	if !regexp.MustCompile(`"file": ".*out-of-range\.toml",\s+"line": 3,\s+"col": 1,\s+"key": "limits.block_at_percent"`).MatchString(out) {
		t.Errorf("check --json errors:\n%s", out)
	}
	var e env
	e.stdin = strings.NewReader(strings.Repeat("same line\n", 50))
	e.getenv = func(string) string { return "" }
	var stdout, stderr bytes.Buffer
	if code := runEnv([]string{"compress", "--stats", "--json"}, &stdout, &stderr, e); code != exitOK ||
		!strings.Contains(stdout.String(), `"lines": {`) {
		t.Errorf("compress --stats --json: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
