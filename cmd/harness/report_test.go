package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/loggen"
	"github.com/agentharness/harness/internal/race"
	"github.com/agentharness/harness/report"
)

// ledgerTotals adds up the ledger's sessions as `harness sessions --json`
// lists them.
func ledgerTotals(t *testing.T, sessionsJSON string) report.Usage {
	t.Helper()
	var rows []struct {
		Budget contract.Budget `json:"budget"`
	}
	if err := json.Unmarshal([]byte(sessionsJSON), &rows); err != nil {
		t.Fatalf("%v\n%s", err, sessionsJSON)
	}
	var u report.Usage
	for _, r := range rows {
		u.Tokens += r.Budget.Tokens.Used
		u.Shell += r.Budget.Shell.Used
		u.CostMicros += r.Budget.Cost.Used
	}
	return u
}

// Sessions scripted through the CLI, decided and charged by the governor
// itself: the report of its decision log adds up to the ledger, in every
// output.
func TestReportOfScriptedSessions(t *testing.T) {
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
	a := []string{"--session", "s-1", "--agent", "claude-code"}
	b := []string{"--session", "s-2", "--agent", "ci", "--role", "reviewer"}
	for range 3 {
		run(0, append([]string{"decide", "--tool", "ctx_shell", "--record"}, a...)...)
	}
	run(0, append([]string{"decide", "--tool", "ctx_shell"}, a...)...) // a question: no slot taken
	run(0, append([]string{"record", "--tool", "ctx_read", "--output-text", strings.Repeat("hello world ", 500)}, a...)...)
	run(2, append([]string{"decide", "--tool", "ctx_shell", "--record"}, b...)...)
	run(0, append([]string{"decide", "--tool", "ctx_search", "--record"}, b...)...)
	run(0, "record", "--session", "s-2", "--agent", "ci", "--tool", "ctx_search", "--output-text", "found it", "--args", `{"q": "x"}`)
	// The operator resets s-1 (its counters start again) and it works on.
	run(0, "budget", "reset", "--session", "s-1", "--agent", "claude-code")
	run(0, append([]string{"decide", "--tool", "ctx_shell", "--record"}, a...)...)
	want := ledgerTotals(t, run(0, "sessions", "--json"))

	var r report.Report
	if err := json.Unmarshal([]byte(run(0, "report", "--json")), &r); err != nil {
		t.Fatal(err)
	}
	// The ledger holds what came after the reset; the log, all of it.
	if r.Ledger != want || !r.Accounted || r.Totals.Shell != 4 || r.Totals.Tokens == 0 || want.Shell != 1 {
		t.Errorf("report totals %+v, ledger %+v (accounted %v), the ledger's %+v", r.Totals.Counts, r.Ledger, r.Accounted, want)
	}
	for _, s := range r.Sessions {
		if s.Reset != (s.Session == "s-1") || !s.Accounted {
			t.Errorf("session %s: reset %v, accounted %v", s.Session, s.Reset, s.Accounted)
		}
	}
	if r.Totals.Calls != 7 || r.Totals.Denied != 1 || r.Totals.DeniedBy[contract.CodeToolDenied] != 1 || len(r.Groups) != 2 || r.Totals.Sessions != 2 {
		t.Errorf("counts: %+v, %d rows", r.Totals, len(r.Groups))
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"report"}, []string{"claude-code", "TOTAL", "the log accounts for all of it"}},
		{[]string{"report", "--by", "tool", "--csv"}, []string{"tool,calls,", "ctx_read,0,0,0,0,", "denied_tool_denied"}},
		{[]string{"report", "--by", "role"}, []string{"coder", "reviewer"}},
		{[]string{"report", "--since", "1h", "--by", "session"}, []string{"claude-code/s-1", "ci/s-2"}},
		{[]string{"report", "--from", "2000-01-01", "--to", "2000-01-02"}, []string{"0 calls and 0 charges"}},
	} {
		out := run(0, tt.args...)
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("harness %s lacks %q:\n%s", strings.Join(tt.args, " "), w, out)
			}
		}
	}
	page := filepath.Join(t.TempDir(), "report.html")
	run(0, "report", "--html", page)
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `data-chart="tokens"`) {
		t.Errorf("the HTML report: %v", err)
	}
	for _, bad := range [][]string{{"report", "--by", "week"}, {"report", "--json", "--csv"}, {"report", "--since", "24h", "--from", "2026-01-01"}, {"report", "extra"}} {
		run(1, bad...)
	}
}

// `harness report` over a generated log of 100,000 decisions (and their
// charges) in the default places: its totals equal the ledger's, and the
// time each run of the binary took is reported (target: under 2 s). Under
// the race detector, where generating the log takes most of a minute,
// 10,000 decisions; make test-grids runs it whole without it.
func TestReportLargeLog(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 100,000 decisions")
	}
	t.Parallel()
	bin, _ := buildBinaries(t)
	ctx := context.Background()
	home := t.TempDir()
	state := filepath.Join(home, ".local", "state", "lean-ctx", "harness")
	mem := budget.NewMemory()
	start := time.Now()
	calls := race.Size(100_000, 10)
	st, err := loggen.Generate(ctx, loggen.Options{Decisions: filepath.Join(state, "decisions.jsonl"), Events: filepath.Join(state, "events.jsonl"),
		Calls: calls, Agents: 5, Sessions: 300, Start: time.Now().Add(-72 * time.Hour), Span: 70 * time.Hour, Seed: 3, Store: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d decisions and %d charges in %v", st.Decisions, st.Charges, time.Since(start))
	// The ledger the CLI opens holds what the generated calls charged.
	sq, err := budget.OpenSQLite(ctx, filepath.Join(state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := mem.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var want report.Usage
	for _, s := range list {
		if _, err := sq.InitRole(ctx, s.Key, s.Role); err != nil {
			t.Fatal(err)
		}
		if _, err := sq.Charge(ctx, s.Key, "", s.Tokens, s.CostMicros); err != nil {
			t.Fatal(err)
		}
		for range s.Shell {
			if _, err := sq.AddShell(ctx, s.Key, ""); err != nil {
				t.Fatal(err)
			}
		}
		want.Tokens += s.Tokens
		want.Shell += s.Shell
		want.CostMicros += s.CostMicros
	}
	sq.Close()
	fi, _ := os.Stat(filepath.Join(state, "decisions.jsonl"))
	for i := range 3 {
		cmd := exec.Command(bin, "report", "--json")
		cmd.Dir, cmd.Env = home, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		var errb strings.Builder
		cmd.Stderr = &errb
		start := time.Now()
		out, err := cmd.Output()
		took := time.Since(start)
		if err != nil {
			t.Fatalf("harness report: %v\n%s", err, errb.String())
		}
		if errb.Len() > 0 {
			t.Errorf("harness report wrote to a stderr that is not a terminal: %q", errb.String())
		}
		var r report.Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		got := report.Usage{Tokens: r.Totals.Tokens, Shell: r.Totals.Shell, CostMicros: r.Totals.CostMicros}
		if got != want || r.Ledger != want || !r.Accounted || r.Totals.Calls != int64(calls) {
			t.Fatalf("totals %+v, ledger %+v (accounted %v), want %+v; %d calls", got, r.Ledger, r.Accounted, want, r.Totals.Calls)
		}
		t.Logf("run %d: harness report over %d decisions (%.0f MB of decision log) took %v", i+1, r.Totals.Calls, float64(fi.Size())/1e6, took)
	}
}

// Long commands show their progress on a terminal's stderr, and nothing
// when it is piped. The terminal is util-linux's script(1) (in every
// Debian), which runs the command on a pseudo-terminal.
func TestProgressOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("no script(1) to run a command on a terminal: install util-linux (bsdutils)")
	}
	bin, _ := buildBinaries(t)
	home := t.TempDir()
	project := t.TempDir()
	for i := range 30 {
		writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "r"+strconv.Itoa(i)+".toml"), "[role]\ninherits = \"coder\"\n")
	}
	writeFile(t, filepath.Join(project, ".lean-ctx", "policies", "p_test.rego"),
		"package harness.custom.p_test\n\ntest_one if true\n\ntest_two if true\n")
	ctx := context.Background()
	if _, err := loggen.Generate(ctx, loggen.Options{Decisions: filepath.Join(home, ".local", "state", "lean-ctx", "harness", "decisions.jsonl"),
		Calls: 3000, Agents: 2, Sessions: 5, Start: time.Now().Add(-time.Hour), Span: time.Hour, Seed: 1, Store: budget.NewMemory()}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"compile", "--out", filepath.Join(t.TempDir(), "bundle")}, `harness compile: loading and compiling.*\r\x1b\[Kharness compile (\d+)/(\d+)\r\x1b\[Kwrote`},
		{[]string{"test"}, `harness test: compiling the policies\r\x1b\[K(harness test 1/2\r\x1b\[K)?harness test 2/2\r\x1b\[KPASS`},
		{[]string{"report", "--json"}, `harness report: reading the logs 100% \([0-9.]+ of [0-9.]+ MB\)\r\x1b\[K`},
	} {
		args := append([]string{"--project", project}, tt.args...)
		// Piped: not a byte of progress.
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = project, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		var errb strings.Builder
		cmd.Stderr = &errb
		if out, err := cmd.Output(); err != nil {
			t.Fatalf("harness %v: %v\n%s%s", tt.args, err, out, errb.String())
		}
		if strings.Contains(errb.String(), "\r") || strings.Contains(errb.String(), "\x1b") {
			t.Errorf("harness %v, piped, wrote progress: %q", tt.args, errb.String())
		}
		// On a terminal: the progress line, cleared at the end.
		line := bin
		for _, a := range args {
			line += " '" + a + "'"
		}
		cmd = exec.Command(script, "-qec", line, "/dev/null")
		cmd.Dir, cmd.Env = project, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("script harness %v: %v\n%q", tt.args, err, out)
		}
		if m := regexp.MustCompile(tt.says).FindStringSubmatch(string(out)); m == nil || len(m) == 3 && m[1] != m[2] {
			t.Errorf("harness %v on a terminal shows no %q: %q", tt.args, tt.says, out)
		}
	}
}
