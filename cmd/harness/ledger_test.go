package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/testredis"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testredis.Stop()
	os.Exit(code)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A session scripted through the CLI: counters persist between processes
// in the default ledger (an SQLite file in the user's state directory).
func TestScriptedSession(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := harnessIn(t, home, nil, args...)
		if code != want {
			t.Fatalf("harness %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	s := []string{"--session", "s-1", "--agent", "claude-code"}
	out := run(0, append([]string{"decide", "--tool", "ctx_shell", "--record"}, s...)...)
	if !strings.Contains(out, "recorded: shell invocation 1") || !strings.Contains(out, "| shell 1/100 (1%) |") {
		t.Errorf("decide --record:\n%s", out)
	}
	// Without --record the decision takes nothing.
	run(0, append([]string{"decide", "--tool", "ctx_shell"}, s...)...)
	logFile := filepath.Join(t.TempDir(), "build.log")
	writeFile(t, logFile, strings.Repeat("hello world ", 10000)) // 20001 tokens
	for range 7 {
		run(0, append([]string{"record", "--tool", "ctx_read", "--output-file", logFile}, s...)...)
	}
	out = run(0, append([]string{"budget"}, s...)...)
	if !strings.HasPrefix(out, "Budget[coder]: tokens 140007/200000 (70%) | shell 1/100 (1%) | cost $1.40/$5.00 (28%) → OK") {
		t.Errorf("budget after 7 records:\n%s", out)
	}
	out = run(0, append([]string{"record", "--tool", "ctx_read", "--output-file", logFile, "--args", `{"path": "build.log"}`}, s...)...)
	if !strings.Contains(out, "recorded ctx_read for session claude-code/s-1: 20001 output tokens, 7 input tokens") || !strings.Contains(out, "→ WARNING") {
		t.Errorf("record:\n%s", out)
	}
	out = run(0, append([]string{"decide", "--tool", "ctx_read"}, s...)...)
	if !strings.HasPrefix(out, "warn:") {
		t.Errorf("at 80%%:\n%s", out)
	}
	for range 2 {
		run(0, append([]string{"record", "--tool", "ctx_read", "--output-text", strings.Repeat("hello world ", 10000)}, s...)...)
	}
	out = run(2, append([]string{"decide", "--tool", "ctx_read"}, s...)...)
	if !strings.Contains(out, "budget_exhausted") {
		t.Errorf("at 100%%:\n%s", out)
	}
	run(0, append([]string{"decide", "--tool", "ctx_session"}, s...)...)
	// Another session, or the same session id of another agent, is untouched.
	run(0, "decide", "--tool", "ctx_read", "--session", "s-1", "--agent", "cursor")
	if out := run(0, "budget", "--session", "s-1", "--agent", "cursor"); !strings.HasPrefix(out, "Budget[coder]: tokens 0/200000") {
		t.Errorf("cursor's s-1 shares counters:\n%s", out)
	}
	// The operator's reset, and only it, lowers usage.
	run(1, "budget", "reset")
	out = run(0, append([]string{"budget", "reset"}, s...)...)
	if !strings.Contains(out, "reset the usage of session claude-code/s-1 (its role is kept)") || !strings.Contains(out, "tokens 0/200000") {
		t.Errorf("reset:\n%s", out)
	}
}

func TestSessionRoleAndFlags(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	vars := map[string]string{"LEAN_CTX_ROLE": "reviewer", "HARNESS_SESSION": "env-session"}
	out, _, code := harnessIn(t, home, vars, "decide", "--tool", "ctx_edit")
	if code != 2 || !strings.Contains(out, "deny: role reviewer") {
		t.Fatalf("a new session starts in $LEAN_CTX_ROLE: exit %d\n%s", code, out)
	}
	// The session keeps its role: the environment names only a new session's.
	out, _, _ = harnessIn(t, home, map[string]string{"HARNESS_SESSION": "env-session"}, "decide", "--tool", "ctx_read")
	if !strings.Contains(out, "allow: role reviewer") {
		t.Errorf("the session's role was not kept:\n%s", out)
	}
	_, errOut, code := harnessIn(t, home, vars, "decide", "--tool", "ctx_edit", "--role", "coder")
	if code != 1 || !strings.Contains(errOut, "session env-session is in role reviewer; --role coder only names the role of a new session") {
		t.Errorf("--role against a session's role: exit %d\n%s", code, errOut)
	}
	_, errOut, code = harnessIn(t, home, vars, "decide", "--tool", "x", "--tokens", "5")
	if code != 1 || !strings.Contains(errOut, "with a session the counters come from the ledger") {
		t.Errorf("--tokens with a session: exit %d\n%s", code, errOut)
	}
	_, errOut, code = harness(t, nil, "decide", "--tool", "x", "--record")
	if code != 1 || !strings.Contains(errOut, "--record needs a session") {
		t.Errorf("--record without a session: exit %d\n%s", code, errOut)
	}
	_, errOut, code = harness(t, nil, "record", "--tool", "x")
	if code != 1 || !strings.Contains(errOut, "exactly one of --output-file F or --output-text TEXT") {
		t.Errorf("record without output: exit %d\n%s", code, errOut)
	}
}

func TestConfigurationFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), `
[enforcement]
mode = "shadow"
default_role = "reviewer"

[cost]
default_model = "pricey"

[cost.models.pricey]
input_usd_per_mtok = 0
output_usd_per_mtok = 100
`)
	out, _, code := harnessIn(t, home, nil, "decide", "--tool", "ctx_edit", "--session", "x")
	if code != 0 || !strings.HasPrefix(out, "deny (shadow mode: not enforced): role reviewer, tool ctx_edit") {
		t.Errorf("shadow mode: exit %d\n%s", code, out)
	}
	out, _, _ = harnessIn(t, home, nil, "record", "--tool", "ctx_read", "--session", "x", "--output-text", "hello world", "--json")
	if !strings.Contains(out, `"cost_micros": 200`) { // 2 tokens at $100 per million
		t.Errorf("configured price:\n%s", out)
	}
	out, _, code = harnessIn(t, home, nil, "check")
	if code != 0 || !strings.Contains(out, "mode: shadow") {
		t.Errorf("check: exit %d\n%s", code, out)
	}

	// A project's file may not loosen governance.
	project := t.TempDir()
	writeFile(t, filepath.Join(project, ".lean-ctx", "harness.toml"), "[enforcement]\nmode = \"shadow\"\n")
	out, _, code = harnessIn(t, home, nil, "check", "--project", project)
	if code != exitCheck || !strings.Contains(out, "enforcement.mode may only be set in the user's harness.toml") {
		t.Errorf("project shadow mode: exit %d\n%s", code, out)
	}
}

// Separate harness processes racing for a session's last 5 shell slots:
// exactly 5 are allowed, on the embedded ledger and on Redis.
func TestShellSlotsAcrossProcesses(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tt := range []struct{ name, ledger string }{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")},
		{"redis", testredis.URL(t)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			session := fmt.Sprintf("race-%d", time.Now().UnixNano())
			cmd := func(args ...string) *exec.Cmd {
				c := exec.Command(bin, append(args, "--ledger", tt.ledger, "--session", session)...)
				c.Env = append(os.Environ(), "HOME="+home)
				c.Dir = home
				return c
			}
			// Use 95 of the coder's 100 shell slots.
			for range 95 {
				if out, err := cmd("decide", "--tool", "ctx_execute", "--record").CombinedOutput(); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			}
			var mu sync.Mutex
			codes := map[int]int{}
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					c := cmd("decide", "--tool", "ctx_shell", "--record")
					out, err := c.CombinedOutput()
					code := 0
					if ee, ok := err.(*exec.ExitError); ok {
						code = ee.ExitCode()
					} else if err != nil {
						t.Error(err)
					}
					if code != 0 && code != 2 {
						t.Errorf("exit %d:\n%s", code, out)
					}
					mu.Lock()
					codes[code]++
					mu.Unlock()
				})
			}
			wg.Wait()
			out, _ := cmd("budget").Output()
			if codes[0] != 5 || codes[2] != 11 || !strings.Contains(string(out), "| shell 100/100 (100%) |") {
				t.Errorf("allowed %d, denied %d (want 5 and 11); %s", codes[0], codes[2], out)
			}
		})
	}
}

// check holds agents to roles there are, and to starting roles within their
// most privileged roles; each problem is named at its place in the file.
func TestCheckAgentRoles(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, config, want string
		vars               map[string]string
		role               string // the user's role file tight.toml
	}{
		{"within", "[agents.a]\nrole = \"reviewer\"\nmax_role = \"coder\"\n", "ok: 5 roles", nil, ""},
		{"beyond", "[agents.a]\nrole = \"coder\"\nmax_role = \"reviewer\"\n",
			"harness.toml:3:1: agents.a.max_role: agent a starts in role coder (agents.a.role), which is beyond its max_role reviewer\n1 error(s)", nil, ""},
		{"token beyond", "[[gateway.tokens]]\nagent = \"ci\"\ntoken = \"0123456789abcdef-ci\"\nrole = \"admin\"\nmax_role = \"coder\"\n",
			"harness.toml:5:1: gateway.tokens[1].max_role: agent ci starts in role admin (gateway.tokens[1].role), which is beyond its max_role coder", nil, ""},
		{"beyond by the default role", "[enforcement]\ndefault_role = \"debugger\"\n[agents.a]\nmax_role = \"coder\"\n",
			"harness.toml:4:1: agents.a.max_role: agent a starts in role debugger (enforcement.default_role), which is beyond its max_role coder", nil, ""},
		{"unknown max role", "[agents.a]\nmax_role = \"boss\"\n", `harness.toml:2:1: agents.a.max_role: unknown role "boss"; available roles: admin, coder`, nil, ""},
		{"unknown starting role", "[agents.a]\nrole = \"boss\"\n", `harness.toml:2:1: agents.a.role: unknown role "boss"`, nil, ""},
		{"unknown default role", "[enforcement]\ndefault_role = \"boss\"\n", `harness.toml:2:1: enforcement.default_role: unknown role "boss"`, nil, ""},
		{"unknown LEAN_CTX_ROLE", "", `$LEAN_CTX_ROLE: unknown role "boss"`, map[string]string{"LEAN_CTX_ROLE": "boss"}, ""},
		{"unknown ledger scheme", "[ledger]\nurl = \"postgres://x\"\n",
			`harness.toml:2:1: ledger.url: ledger "postgres://x": unknown scheme (want memory:, sqlite:PATH, redis://host:port/db, redis+cluster://host:port,... or redis+sentinel://host:port,.../master)`, nil, ""},
		{"malformed Redis URL", "[ledger]\nurl = \"redis://localhost:6379/zero\"\n",
			`harness.toml:2:1: ledger.url: redis: invalid database number: "zero"`, nil, ""},
		{"role warns above its block", "", `tight.toml:4:1: limits.warn_at_percent 90 is above limits.block_at_percent 50`, nil,
			"[role]\ninherits = \"coder\"\n[limits]\nwarn_at_percent = 90\nblock_at_percent = 50\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), tt.config)
			if tt.role != "" {
				writeFile(t, filepath.Join(home, ".lean-ctx", "roles", "tight.toml"), tt.role)
			}
			out, _, code := harnessIn(t, home, tt.vars, "check")
			wantCode := exitCheck
			if tt.name == "within" {
				wantCode = exitOK
			}
			if code != wantCode || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, want %d\n%s", code, wantCode, out)
			}
			if wantCode == exitOK {
				return
			}
			// Every command loads through the same checks: none runs on
			// a configuration check refuses.
			problem := tt.want[strings.Index(tt.want, ": ")+2:]
			problem, _, _ = strings.Cut(problem, "\n")
			for _, args := range [][]string{
				{"decide", "--tool", "ctx_read"},
				{"decide", "--tool", "ctx_read", "--session", "s", "--agent", "a"},
				{"budget", "--session", "s"},
				{"roles", "list"},
				{"serve", "--", "true"},
			} {
				_, errOut, code := harnessIn(t, home, tt.vars, args...)
				if code != exitError || !strings.Contains(errOut, problem) {
					t.Errorf("%v: exit %d, want %d with %q\n%s", args, code, exitError, problem, errOut)
				}
			}
			hookVars := map[string]string{"HARNESS_HOOK_DAEMON": "off"}
			maps.Copy(hookVars, tt.vars)
			out, errOut, code := runHook(t, home, hookVars, payload(t, "pre-read.json", "s"))
			if code != 2 || !strings.Contains(errOut, problem) || !strings.Contains(errOut, "refusing the call") {
				t.Errorf("hook: exit %d, want 2 with %q\n%s%s", code, problem, out, errOut)
			}
		})
	}
}

// Commands that read a session find it, never invent it: without an agent
// they take the one agent's session of that id, say which agents to choose
// from when several have one, and say so when none has; `harness sessions`
// lists what the ledger has.
func TestSessionsFoundNotInvented(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := harnessIn(t, home, nil, args...)
		if code != want {
			t.Errorf("harness %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}
	for _, args := range [][]string{{"budget"}, {"role"}, {"record", "--tool", "x", "--output-text", "y"}} {
		if _, errOut := run(1, args...); !strings.Contains(errOut, "name the session with --session S") {
			t.Errorf("%v without a session: %s", args, errOut)
		}
	}
	for _, args := range [][]string{
		{"budget", "--session", "ghost"},
		{"budget", "reset", "--session", "ghost"},
		{"role", "--session", "ghost"},
		{"record", "--session", "ghost", "--tool", "x", "--output-text", "y"},
	} {
		if _, errOut := run(1, args...); !strings.Contains(errOut, "no session ghost in the ledger (harness sessions lists them)") {
			t.Errorf("%v: %s", args, errOut)
		}
	}
	if out, _ := run(0, "sessions"); out != "" {
		t.Errorf("reading sessions created some:\n%s", out)
	}

	run(0, "decide", "--tool", "ctx_read", "--session", "s-1", "--agent", "claude-code")
	run(0, "record", "--tool", "ctx_read", "--output-text", "hello world", "--session", "s-1") // the one agent's
	if out, _ := run(0, "budget", "--session", "s-1"); !strings.HasPrefix(out, "Budget[coder]: tokens 2/200000") {
		t.Errorf("the one agent's session:\n%s", out)
	}
	run(0, "decide", "--tool", "ctx_read", "--session", "s-1", "--agent", "cursor", "--role", "reviewer")
	for _, args := range [][]string{{"budget", "--session", "s-1"}, {"decide", "--tool", "ctx_read", "--session", "s-1"}} {
		if _, errOut := run(1, args...); !strings.Contains(errOut, "session s-1 is a session of several agents (claude-code, cursor): name one with --agent") {
			t.Errorf("%v: %s", args, errOut)
		}
	}
	if out, _ := run(0, "budget", "--session", "s-1", "--agent", "cursor"); !strings.HasPrefix(out, "Budget[reviewer]") {
		t.Errorf("with the agent:\n%s", out)
	}
	if _, errOut := run(1, "budget", "--session", "s-1", "--agent", ""); !strings.Contains(errOut, "no session s-1 in the ledger") {
		t.Errorf("the agent-less s-1: %s", errOut)
	}
	out, _ := run(0, "sessions")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "AGENT") ||
		!regexp.MustCompile(`(?m)^cursor\s+s-1\s+reviewer\s+0/150000\s+0/0\s+\$0\.00/\$3\.00\s+OK\s+\d{4}-\d\d-\d\dT`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^claude-code\s+s-1\s+coder\s+2/200000\s+0/100\s+\$0\.00/\$5\.00\s+OK\s+\d{4}-`).MatchString(out) {
		t.Errorf("sessions:\n%s", out)
	}
	out, _ = run(0, "sessions", "--agent", "cursor", "--json")
	var rows []struct {
		Agent, Session, Role string
		Budget               contract.Budget
		LastActivity         time.Time `json:"last_activity"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0].Agent != "cursor" || rows[0].Role != "reviewer" ||
		rows[0].Budget.Tokens.Limit != 150000 || time.Since(rows[0].LastActivity) > time.Hour {
		t.Errorf("sessions --json: %v\n%s", err, out)
	}
	// A switch may start a session, and says so.
	if out, _ := run(0, "role", "set", "ops", "--session", "s-2"); !strings.Contains(out, "session s-2 is new: it starts in role coder") ||
		!strings.Contains(out, "role coder → ops (by the operator)") {
		t.Errorf("role set on a new session:\n%s", out)
	}
}

// record --model charges a model's price from the built-in table (by its
// dated name as an API gives it), or the configuration's; a model the
// table does not know is charged the default price, with a warning.
func TestRecordModelPrices(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"),
		"[cost.models.house]\ninput_usd_per_mtok = 1000.0\noutput_usd_per_mtok = 2000.0\ncache_read_usd_per_mtok = 1.0\n")
	if _, errOut, code := harnessIn(t, home, nil, "decide", "--tool", "ctx_read", "--session", "m"); code != 0 {
		t.Fatal(errOut)
	}
	output := strings.Repeat("hello world ", 1000)
	for _, tt := range []struct {
		model string
		price int64 // of output, micro-dollars per million tokens
		warn  bool
	}{
		{"claude-sonnet-4-5-20250929", 15_000_000, false},
		{"gpt-5.4-mini", 4_500_000, false},
		{"house", 2_000_000_000, false}, // the configuration's
		{"gpt-9", 10_000_000, true},     // the default's
	} {
		out, errOut, code := harnessIn(t, home, nil, "record", "--session", "m", "--tool", "ctx_read", "--output-text", output, "--model", tt.model, "--json")
		var ch struct {
			OutputTokens int64 `json:"output_tokens"`
			CostMicros   int64 `json:"cost_micros"`
		}
		err := json.Unmarshal([]byte(out), &ch)
		want := (ch.OutputTokens*tt.price + 999_999) / 1_000_000
		if code != 0 || err != nil || ch.OutputTokens < 2000 || ch.CostMicros != want {
			t.Errorf("%s: exit %d, %+v, want %d micro-dollars\n%s%s", tt.model, code, ch, want, out, errOut)
		}
		if warned := strings.Contains(errOut, `no price for model "`+tt.model+`": charged at the price of default`); warned != tt.warn {
			t.Errorf("%s: warned %v: %q", tt.model, warned, errOut)
		}
	}
}
