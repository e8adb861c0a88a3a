package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const switching = "../../testdata/projects/switching"

func TestRoleSwitching(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := harnessIn(t, home, nil, append(args, "--project", switching)...)
		if code != want {
			t.Fatalf("harness %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	s := []string{"--session", "s-1", "--agent", "claude-code"}
	run(0, append([]string{"decide", "--tool", "ctx_shell", "--record"}, s...)...)
	run(0, append([]string{"record", "--tool", "ctx_read", "--output-text", "hello world"}, s...)...)

	// coder → reviewer → coder keeps the counters.
	out := run(0, append([]string{"role", "switch", "reviewer"}, s...)...)
	if !strings.Contains(out, "role coder → reviewer (by the agent); usage kept") || !strings.Contains(out, "Budget[reviewer]: tokens 2/150000 (0%) | shell 1/0 (100%)") {
		t.Errorf("switch to reviewer:\n%s", out)
	}
	run(2, append([]string{"decide", "--tool", "ctx_edit"}, s...)...) // the reviewer's rules now
	out = run(0, append([]string{"role", "switch", "coder"}, s...)...)
	if !strings.Contains(out, "Budget[coder]: tokens 2/200000 (0%) | shell 1/100 (1%)") {
		t.Errorf("back to coder:\n%s", out)
	}

	// The agent cannot enter admin, ops, or an all-powerful project role.
	for to, rule := range map[string]string{"admin": "privileged", "ops": "privileged", "anything": "ceiling"} {
		out := run(2, append([]string{"role", "switch", to}, s...)...)
		if !strings.Contains(out, "refused: session claude-code/s-1 stays in role coder") || !strings.Contains(out, "switch_denied ("+rule+"): ") {
			t.Errorf("switch to %s:\n%s", to, out)
		}
	}
	if out := run(0, append([]string{"role"}, s...)...); !strings.Contains(out, "the agent may switch to: debugger, reviewer") ||
		!strings.Contains(out, "only the operator may switch to: admin, anything, ops") {
		t.Errorf("role:\n%s", out)
	}

	// The custom switch rule: a reviewer may only go back to coder.
	run(0, append([]string{"role", "switch", "reviewer"}, s...)...)
	out = run(2, append([]string{"role", "switch", "debugger"}, s...)...)
	if !strings.Contains(out, "switch_denied (harness.custom.reviewer_to_coder): a reviewer may only switch to coder, not to debugger") {
		t.Errorf("custom rule:\n%s", out)
	}

	// The operator may enter admin, and it is logged as the operator's.
	out = run(0, append([]string{"role", "set", "admin"}, s...)...)
	if !strings.Contains(out, "role reviewer → admin (by the operator)") {
		t.Errorf("operator:\n%s", out)
	}
	evs := eventsOf(t, home, "--session", "s-1")
	var changes, refusals []string
	for _, e := range evs {
		switch e.Type {
		case "RoleChanged":
			changes = append(changes, e.ID)
		case "PolicyViolation":
			if strings.HasPrefix(e.Reason, "switch_denied") {
				refusals = append(refusals, e.Reason)
			}
		}
	}
	out, _, _ = harnessIn(t, home, nil, "events", "--type", "RoleChanged", "--session", "s-1")
	if len(changes) != 4 || len(refusals) != 4 || !strings.Contains(out, "reviewer → admin (by operator)") {
		t.Errorf("%d RoleChanged, %d switch refusals:\n%s", len(changes), len(refusals), out)
	}
	out, _, _ = harnessIn(t, home, nil, "log", "--session", "s-1", "--limit", "0")
	if strings.Count(out, ": switched") != 4 || strings.Count(out, ": refused switch_denied(") != 4 ||
		!strings.Contains(out, "switch reviewer → admin by operator: switched") {
		t.Errorf("log:\n%s", out)
	}

	// Two sessions hold different roles at the same time.
	run(0, "role", "switch", "debugger", "--session", "s-2")
	if out := run(0, "role", "--session", "s-2"); !strings.Contains(out, "session s-2: role debugger") {
		t.Errorf("s-2:\n%s", out)
	}
	if out := run(0, append([]string{"role"}, s...)...); !strings.Contains(out, "session claude-code/s-1: role admin") {
		t.Errorf("s-1:\n%s", out)
	}

	// The switch rule's own tests pass.
	if out := run(0, "test"); !strings.Contains(out, "PASS: 4/4") {
		t.Errorf("harness test:\n%s", out)
	}
}

// A new session starts in its agent's configured role, else
// $LEAN_CTX_ROLE, else the default.
func TestStartingRole(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, home+"/.lean-ctx/harness.toml", "[agents.cursor]\nrole = \"reviewer\"\n[enforcement]\ndefault_role = \"debugger\"\n")
	for _, tt := range []struct {
		agent, env, want string
	}{
		{"cursor", "coder", "reviewer"},
		{"claude-code", "coder", "coder"},
		{"claude-code", "", "debugger"},
	} {
		session := []string{"--session", "new-" + tt.agent + tt.env, "--agent", tt.agent}
		harnessIn(t, home, map[string]string{"LEAN_CTX_ROLE": tt.env}, append([]string{"decide", "--tool", "ctx_session"}, session...)...)
		out, _, _ := harnessIn(t, home, nil, append([]string{"role"}, session...)...)
		if !strings.Contains(out, ": role "+tt.want+" (") {
			t.Errorf("agent %s, LEAN_CTX_ROLE=%q: want %s\n%s", tt.agent, tt.env, tt.want, out)
		}
	}
}

// TestARoleSwitchedElsewhereIsHeldToTheCeiling: an agent whose session
// works in one repository cannot take a role that repository defines wide
// by switching where the same name is narrow (a worktree of another
// branch, a directory of its making), nor by rewriting a narrow role's
// file after switching into it: every call of the session is decided
// with the role as the repository it works in defines it now, and a
// project's role beyond the ceiling is refused.
func TestARoleSwitchedElsewhereIsHeldToTheCeiling(t *testing.T) {
	t.Parallel()
	const (
		narrow = "[role]\ninherits = \"reviewer\"\n"
		wide   = "[role]\ninherits = \"admin\"\nprivileged = false\n[limits]\nmax_shell_invocations = 1000000\nmax_cost_usd = 1000.0\n"
	)
	for _, tt := range []struct {
		name string
		// where the switch is made: "elsewhere" a directory where helper
		// is narrow; "here, then widened" the repository itself, its
		// helper narrow until after the switch.
		how string
	}{
		{"switched elsewhere", "elsewhere"},
		{"switched here, then widened", "here"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home, repo, other := t.TempDir(), t.TempDir(), t.TempDir()
			helper := filepath.Join(repo, ".lean-ctx", "roles", "helper.toml")
			write := func(path, text string) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(filepath.Join(other, ".lean-ctx", "roles", "helper.toml"), narrow)
			if tt.how == "here" {
				write(helper, narrow)
			} else {
				write(helper, wide)
			}
			vars := map[string]string{"CLAUDE_PROJECT_DIR": repo, "LEAN_CTX_ROLE": "reviewer", "HARNESS_HOOK_DAEMON": "off"}
			bash := preToolUse("s1", repo, "Bash", `{"command": "echo hi"}`)
			if out, _, _ := runHook(t, home, vars, bash); !strings.Contains(out, `"permissionDecision":"deny"`) {
				t.Fatalf("a reviewer's Bash: %s", out)
			}
			where := other
			if tt.how == "here" {
				where = repo
			}
			if out, errOut, code := harnessIn(t, home, nil, "role", "switch", "helper", "--session", "s1", "--agent", "claude-code", "--project", where); code != 0 {
				t.Fatalf("the switch into the narrow helper: exit %d\n%s%s", code, out, errOut)
			}
			if tt.how == "here" {
				write(helper, wide)
			}
			out, _, _ := runHook(t, home, vars, bash)
			if !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "switch_denied") || !strings.Contains(out, "beyond") {
				t.Errorf("Bash in the wide helper the agent switched into: %s", out)
			}
			if out, _, _ := harnessIn(t, home, nil, "decide", "--tool", "ctx_read", "--session", "s1", "--agent", "claude-code", "--project", repo); !strings.Contains(out, "switch_denied") {
				t.Errorf("harness decide for the session: %s", out)
			}
		})
	}
}
