package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentharness/harness/contract"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	auditor = "../../testdata/projects/auditor"
	broken  = "../../testdata/projects/broken"
)

// harness runs the command with a private home and working directory, and
// the given environment variables.
func harness(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return harnessIn(t, t.TempDir(), vars, args...)
}

// harnessIn runs the command with home as home and working directory, so
// that several runs share the user's files and default ledger.
func harnessIn(t *testing.T, home string, vars map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	e := env{
		getenv:  func(k string) string { return vars[k] },
		workDir: home,
		home:    home,
	}
	var out, errb bytes.Buffer
	code = runEnv(args, &out, &errb, e)
	return out.String(), errb.String(), code
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		vars map[string]string
		args []string
		code int
		want []string // lines the output must contain
	}{
		{"coder may call anything", nil, []string{"--tool", "ctx_edit"}, 0, []string{"allow: role coder, tool ctx_edit"}},
		{"reviewer reads", nil, []string{"--role", "reviewer", "--tool", "ctx_read"}, 0, []string{"allow"}},
		{"reviewer may not edit", nil, []string{"--role", "reviewer", "--tool", "ctx_edit"}, 2,
			[]string{"deny: role reviewer, tool ctx_edit", "  reason  tool_denied: tool 'ctx_edit' is denied for role 'reviewer'"}},
		{"reviewer may not shell", nil, []string{"--role", "reviewer", "--tool", "ctx_shell"}, 2, []string{"tool_denied"}},
		{"reviewer may not execute", nil, []string{"--role", "reviewer", "--tool", "ctx_execute"}, 2, []string{"tool_denied"}},
		{"ops shell", nil, []string{"--role", "ops", "--tool", "ctx_shell"}, 0, []string{"allow", "output will be compressed (shell_policy compress)"}},
		{"ops edit", nil, []string{"--role", "ops", "--tool", "ctx_edit"}, 2, []string{"tool_denied"}},
		{"admin anything", nil, []string{"--role", "admin", "--tool", "deploy_prod"}, 0, []string{"allow"}},
		{"role from LEAN_CTX_ROLE", map[string]string{"LEAN_CTX_ROLE": "reviewer"}, []string{"--tool", "ctx_edit"}, 2, []string{"deny: role reviewer"}},
		{"--role beats LEAN_CTX_ROLE", map[string]string{"LEAN_CTX_ROLE": "reviewer"}, []string{"--role", "coder", "--tool", "ctx_edit"}, 0, []string{"allow: role coder"}},
		{"tokens warning", nil, []string{"--tool", "ctx_read", "--tokens", "170000"}, 0,
			[]string{"warn: role coder, tool ctx_read", "  warning budget_warning: tokens at 85% of the budget of role 'coder' (170000 of 200000)"}},
		{"tokens exhausted", nil, []string{"--tool", "ctx_read", "--tokens", "200000"}, 2,
			[]string{"budget_exhausted", "Budget[coder]: tokens 200000/200000 (100%) | shell 0/100 (0%) | cost $0.00/$5.00 (0%) → EXHAUSTED"}},
		{"session stays allowed", nil, []string{"--tool", "ctx_session", "--tokens", "200000"}, 0, []string{"warn: role coder, tool ctx_session"}},
		{"shell 99 of 100", nil, []string{"--tool", "ctx_shell", "--shell", "99"}, 0, []string{"warn"}},
		{"shell 100 of 100", nil, []string{"--tool", "ctx_shell", "--shell", "100"}, 2, []string{"shell_budget"}},
		{"status line of the seeds", nil, []string{"--tool", "ctx_read", "--tokens", "50000", "--shell", "5", "--cost", "0.50"}, 0,
			[]string{"Budget[coder]: tokens 50000/200000 (25%) | shell 5/100 (5%) | cost $0.50/$5.00 (10%) → OK"}},
		{"custom role from the project", nil, []string{"--project", auditor, "--role", "security-auditor", "--tool", "ctx_shell"}, 2, []string{"tool_denied"}},
		{"inherited tools", nil, []string{"--project", auditor, "--role", "tight-reviewer", "--tool", "ctx_edit"}, 2, []string{"tool_denied"}},
		{"inherited limits", nil, []string{"--project", auditor, "--role", "tight-reviewer", "--tool", "ctx_read", "--tokens", "20000"}, 2,
			[]string{"Budget[tight-reviewer]: tokens 20000/20000 (100%) | shell 0/0 (0%) | cost $0.00/$3.00 (0%) → EXHAUSTED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := harness(t, tt.vars, append([]string{"decide"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestDecideJSON(t *testing.T) {
	t.Parallel()
	out, _, code := harness(t, nil, "decide", "--role", "reviewer", "--tool", "ctx_shell", "--tokens", "50000", "--cost", "0.5",
		"--args", `{"command": "ls -la"}`, "--json")
	if code != 2 {
		t.Fatalf("exit %d", code)
	}
	var got struct {
		contract.Decision
		StatusLine string `json:"status_line"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.Decision.Decision != "deny" || got.Reasons[0].Code != "tool_denied" || got.Budget.Cost.Percent != 16 ||
		got.StatusLine != "Budget[reviewer]: tokens 50000/150000 (33%) | shell 0/0 (0%) | cost $0.50/$3.00 (16%) → OK" {
		t.Errorf("decision %+v", got)
	}
	golden(t, "decide-reviewer-shell.json", out)
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "Usage:"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"no tool", []string{"decide"}, "--tool is required"},
		{"unknown role", []string{"decide", "--tool", "x", "--role", "nobody"}, `unknown role "nobody"; available roles: admin, coder, debugger, ops, reviewer`},
		{"bad tokens", []string{"decide", "--tool", "x", "--tokens", "-5"}, `--tokens "-5": want a whole number >= 0`},
		{"bad cost", []string{"decide", "--tool", "x", "--cost", "1e3"}, `--cost: invalid dollar amount "1e3"`},
		{"bad args", []string{"decide", "--tool", "x", "--args", "[1]"}, "--args must be a JSON object"},
		{"missing project", []string{"decide", "--tool", "x", "--project", "/nonexistent/dir"}, "--project: stat /nonexistent/dir"},
		{"broken roles", []string{"decide", "--tool", "x", "--project", broken}, "error(s) in role, configuration or policy files"},
		{"show unknown", []string{"roles", "show", "nobody"}, `unknown role "nobody"`},
		{"compile without out", []string{"compile"}, "--out DIR is required"},
		{"extra argument", []string{"check", "now"}, `harness: check: unexpected argument "now"` + "\n"},
		{"extra argument with a hint", []string{"serve", "lean-ctx"}, `serve: unexpected argument "lean-ctx" (the upstream command goes after --)`},
		{"extra argument of a two-word command", []string{"roles", "list", "x"}, `roles list: unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errOut, code := harness(t, nil, tt.args...)
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, errOut)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	out, _, code := harness(t, nil, "check", "--project", broken)
	if code != exitCheck {
		t.Errorf("exit %d, want %d", code, exitCheck)
	}
	golden(t, "check-broken.txt", out)

	out, _, code = harness(t, nil, "check", "--project", auditor)
	if code != exitOK || !strings.HasPrefix(out, "ok: 7 roles (5 built-in, 0 user, 2 project)\n") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	out, _, code := harness(t, nil, "roles", "list", "--project", auditor)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	golden(t, "roles-list.txt", out)

	out, _, code = harness(t, nil, "roles", "show", "tight-reviewer", "--project", auditor)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	golden(t, "roles-show-tight-reviewer.txt", out)

	out, _, _ = harness(t, nil, "roles", "show", "--json", "security-auditor", "--project", auditor)
	var r struct {
		Chain  []string          `json:"chain"`
		Origin map[string]string `json:"origin"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Chain, ",") != "security-auditor,reviewer" || r.Origin["limits.warn_at_percent"] != "builtin:reviewer.toml" {
		t.Errorf("show --json: %+v", r)
	}
}
