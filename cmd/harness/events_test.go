package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
)

type loggedEvent struct {
	Type       string `json:"type"`
	Time       string `json:"time"`
	ID         string `json:"id"`
	Session    string `json:"session"`
	Agent      string `json:"agent"`
	Role       string `json:"role"`
	Dimension  string `json:"dimension"`
	Used       int64  `json:"used"`
	Tool       string `json:"tool"`
	Reason     string `json:"reason"`
	DecisionID string `json:"decision_id"`
}

func eventsOf(t *testing.T, home string, args ...string) []loggedEvent {
	t.Helper()
	out, errOut, code := harnessIn(t, home, nil, append([]string{"events", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("events: exit %d: %s", code, errOut)
	}
	var list []loggedEvent
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e loggedEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not an event: %q", line)
		}
		list = append(list, e)
	}
	return list
}

// A session scripted through the CLI crosses 80% then 100% of its tokens:
// exactly one BudgetWarning, then one BudgetExhausted, for that dimension.
func TestBudgetEventsOncePerCrossing(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := []string{"--session", "s-1", "--agent", "claude-code"}
	output := strings.Repeat("hello world ", 10000)                                    // 20001 tokens
	harnessIn(t, home, nil, append([]string{"decide", "--tool", "ctx_read"}, s...)...) // the session's first act
	for i := range 12 {
		if _, errOut, code := harnessIn(t, home, nil, append([]string{"record", "--tool", "ctx_read", "--output-text", output}, s...)...); code != 0 {
			t.Fatalf("record %d: %s", i, errOut)
		}
		harnessIn(t, home, nil, append([]string{"decide", "--tool", "ctx_read", "--record"}, s...)...)
	}
	var budget []string
	for _, e := range eventsOf(t, home, "--session", "s-1") {
		if strings.HasPrefix(e.Type, "Budget") {
			budget = append(budget, e.Type+"/"+e.Dimension)
			if e.Agent != "claude-code" || e.Role != "coder" || !strings.HasSuffix(e.Time, "Z") || len(e.ID) != 36 {
				t.Errorf("event fields: %+v", e)
			}
		}
	}
	// tokens cross 80% at the 8th record and 100% at the 10th; cost (at
	// $10/M output tokens) crosses 80% ($4) at the 20th: not reached.
	if got := strings.Join(budget, " "); got != "BudgetWarning/tokens BudgetExhausted/tokens" {
		t.Errorf("budget events: %s", got)
	}
	out, _, _ := harnessIn(t, home, nil, "events", "--type", "BudgetWarning")
	if !regexp.MustCompile(`^\S+Z  BudgetWarning    claude-code/s-1  role coder: tokens 160008/200000 \(80%\)\n$`).MatchString(out) {
		t.Errorf("readable events:\n%s", out)
	}
}

// Crossings are reported once even when many calls cross at the same moment.
func TestCrossingOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	// 24 decisions at once on a busy machine may wait for a core past the
	// default deadline of 250 ms, which is not what this test is about.
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[policy]\ntimeout = \"1m\"\n")
	// Use 79 of the coder's 100 shell slots (the first through the CLI,
	// which opens the session, the others straight in its ledger), then
	// race past 80% and 100%.
	if _, errOut, code := harnessIn(t, home, nil, "decide", "--tool", "ctx_shell", "--record", "--session", "c"); code != 0 {
		t.Fatal(errOut)
	}
	ctx := context.Background()
	sq, err := budget.OpenSQLite(ctx, filepath.Join(home, ".local", "state", "lean-ctx", "harness", "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := sq.Sessions(ctx, "c")
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions c: %+v %v", list, err)
	}
	for range 78 {
		if _, err := sq.AddShell(ctx, list[0].Key, ""); err != nil {
			t.Fatal(err)
		}
	}
	sq.Close()
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() { harnessIn(t, home, nil, "decide", "--tool", "ctx_shell", "--record", "--session", "c") })
	}
	wg.Wait()
	var got []string
	for _, e := range eventsOf(t, home, "--session", "c") {
		if strings.HasPrefix(e.Type, "Budget") {
			got = append(got, e.Type+"/"+e.Dimension)
		}
	}
	if strings.Join(got, " ") != "BudgetWarning/shell BudgetExhausted/shell" {
		t.Errorf("budget events under concurrency: %v", got)
	}
}

func TestPolicyViolationAndDecisionLog(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[log]\nmask = [\"/arguments/password\"]\n")
	_, _, code := harnessIn(t, home, map[string]string{"LEAN_CTX_ROLE": "reviewer"},
		"decide", "--tool", "ctx_edit", "--session", "v", "--args", `{"path": "a.go", "password": "hunter2"}`)
	if code != exitDenied {
		t.Fatalf("exit %d", code)
	}
	list := eventsOf(t, home, "--type", "PolicyViolation")
	if len(list) != 1 || list[0].Tool != "ctx_edit" || list[0].Role != "reviewer" ||
		list[0].Reason != "tool_denied: tool 'ctx_edit' is denied for role 'reviewer'" || list[0].DecisionID == "" {
		t.Fatalf("violations: %+v", list)
	}
	out, errOut, code := harnessIn(t, home, nil, "log", "--decision", list[0].DecisionID)
	if code != 0 {
		t.Fatalf("log: %s", errOut)
	}
	for _, want := range []string{`"path": "harness/decision"`, `"decision": "deny"`, `"erased": [`, `"/input/arguments/password"`, `"timer_rego_query_eval_ns"`, `"harness_version": "0.1.0"`, `"bundles": {`} {
		if !strings.Contains(out, want) {
			t.Errorf("decision entry lacks %s:\n%s", want, out)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(home, ".local", "state", "lean-ctx", "harness", "decisions.jsonl"))
	if len(raw) == 0 || bytes.Contains(raw, []byte("hunter2")) {
		t.Errorf("the masked password reached the decision log (or nothing was logged):\n%s", raw)
	}
	out, _, _ = harnessIn(t, home, nil, "log", "--session", "v")
	if !strings.Contains(out, "  v  reviewer ctx_edit → deny tool_denied\n") {
		t.Errorf("log listing:\n%s", out)
	}
}

func TestExplainAndTrace(t *testing.T) {
	t.Parallel()
	out, _, code := harness(t, nil, "decide", "--project", auditor, "--role", "tight-reviewer", "--tool", "ctx_shell", "--tokens", "17000", "--explain")
	if code != exitDenied {
		t.Fatalf("exit %d", code)
	}
	golden(t, "explain-tight-reviewer-shell.txt", out)
	out, _, _ = harness(t, nil, "decide", "--tool", "ctx_read", "--trace=fails")
	if !strings.Contains(out, "trace (fails):") {
		t.Errorf("trace:\n%.300s", out)
	}
	out, _, _ = harness(t, nil, "decide", "--tool", "ctx_read", "--trace")
	if !strings.Contains(out, "trace (full):") || !strings.Contains(out, "harness.rego:") {
		t.Errorf("full trace:\n%.300s", out)
	}
	if _, errOut, code := harness(t, nil, "decide", "--tool", "ctx_read", "--trace=everything"); code != exitError || !strings.Contains(errOut, "want one of full, notes, fails, debug") {
		t.Errorf("bad trace mode: %d %s", code, errOut)
	}
}

func TestEventsFollow(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan int)
	go func() {
		done <- runEnv([]string{"events", "--follow", "--type", "PolicyViolation"}, &out, &out,
			env{ctx: ctx, getenv: func(string) string { return "" }, workDir: home, home: home})
	}()
	for i := range 3 {
		harnessIn(t, home, nil, "decide", "--tool", "ctx_edit", "--role", "reviewer", "--session", "f"+string(rune('0'+i)))
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "PolicyViolation") < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 || strings.Count(out.String(), "PolicyViolation") != 3 {
		t.Errorf("follow: exit %d\n%s", code, out.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Every reset is an event and a decision-log entry, shown by events and
// log: of a session's usage, and of an agent's across its sessions.
func TestResetsAreEventsAndDecisions(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[agents.ci.budget]\nperiod = \"total\"\nmax_shell_invocations = 10\n")
	for _, args := range [][]string{
		{"decide", "--tool", "ctx_shell", "--record", "--session", "s-1", "--agent", "ci"},
		{"budget", "reset", "--session", "s-1"},
		{"budget", "reset", "--agent", "ci", "--agent-budget"},
	} {
		if _, errOut, code := harnessIn(t, home, nil, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
	}
	out, _, _ := harnessIn(t, home, nil, "events", "--type", "BudgetReset")
	if !regexp.MustCompile(`^\S+Z  BudgetReset      ci/s-1  usage of the session reset by the operator \(role coder\)\n` +
		`\S+Z  BudgetReset      ci  usage of the agent in total reset by the operator\n$`).MatchString(out) {
		t.Errorf("readable events:\n%s", out)
	}
	out, _, _ = harnessIn(t, home, nil, "events", "--json", "--type", "BudgetReset", "--session", "s-1")
	var e struct{ By, Scope, Period, DecisionID string }
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.By != "operator" || e.Scope != "session" || e.Period != "" {
		t.Errorf("event %s: %v", out, err)
	}
	out, _, _ = harnessIn(t, home, nil, "log")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[1], "  ci/s-1  reset: usage of the session, by the operator") ||
		!strings.HasSuffix(lines[2], "  ci  reset: usage of the agent in total, by the operator") {
		t.Errorf("log:\n%s", out)
	}
	if out, _, _ := harnessIn(t, home, nil, "log", "--session", "s-1"); strings.Count(out, "\n") != 2 {
		t.Errorf("log --session s-1:\n%s", out)
	}
}
