package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/internal/loggen"
)

var update = flag.Bool("update", false, "rewrite golden files")

var (
	genStart = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	made     = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
)

// small writes a log of 400 calls of 3 agents over two days, and the
// ledger's sessions with the limits of their roles (fixed times, so that
// the outputs are golden).
func small(t testing.TB) (Options, []LedgerSession) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	o := Options{Decisions: filepath.Join(dir, "decisions.jsonl"), Events: filepath.Join(dir, "events.jsonl")}
	store := budget.NewMemory()
	if _, err := loggen.Generate(ctx, loggen.Options{Decisions: o.Decisions, Events: o.Events, Calls: 400, Agents: 3, Sessions: 7,
		Start: genStart, Span: 48 * time.Hour, Seed: 5, Store: store}); err != nil {
		t.Fatal(err)
	}
	list, err := store.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	limits := map[string]Limits{
		"coder":    {Tokens: 200000, Shell: 100, CostMicros: 5_000_000, WarnPercent: 80, BlockPercent: 100},
		"reviewer": {Tokens: 150000, Shell: 0, CostMicros: 3_000_000, WarnPercent: 80, BlockPercent: 100},
		"debugger": {Tokens: 150000, Shell: 200, CostMicros: 5_000_000, WarnPercent: 80, BlockPercent: 100},
	}
	var ledger []LedgerSession
	for _, s := range list {
		ledger = append(ledger, LedgerSession{Agent: s.Agent, Session: s.Session, Role: s.Role, Defined: true, Tokens: s.Tokens,
			Shell: s.Shell, CostMicros: s.CostMicros, Limits: limits[s.Role], Signal: "OK", Updated: genStart.Add(47 * time.Hour)})
	}
	o.Ledger = ledger
	return o, ledger
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./report -update rewrites it):\n%s", name, got)
	}
}

// The table, CSV and JSON outputs of a fixed log, for each grouping that
// shows something of its own.
func TestOutputsGolden(t *testing.T) {
	base, _ := small(t)
	for _, tt := range []struct {
		by, format string
	}{
		{ByAgent, "table"}, {ByAgent, "csv"}, {ByAgent, "json"},
		{ByTool, "table"}, {ByTool, "csv"},
		{ByDay, "table"}, {ByRole, "table"}, {BySession, "table"},
	} {
		t.Run(tt.by+"-"+tt.format, func(t *testing.T) {
			o := base
			o.By = tt.by
			r, err := Build(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			switch tt.format {
			case "table":
				err = r.WriteTable(&b)
			case "csv":
				err = r.WriteCSV(&b)
			case "json":
				err = r.WriteJSON(&b)
			}
			if err != nil {
				t.Fatal(err)
			}
			ext := map[string]string{"table": "txt", "csv": "csv", "json": "json"}[tt.format]
			golden(t, "report-by-"+tt.by+"."+ext, b.Bytes())
		})
	}
}

// A range keeps the entries in [from, to): fewer calls, the same
// sessions' ledger, and the log's all-time sums still say whether it
// accounts for the ledger.
func TestRange(t *testing.T) {
	base, _ := small(t)
	all, err := Build(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		from, to time.Time
		calls    func(int64) bool
	}{
		{"all", time.Time{}, time.Time{}, func(n int64) bool { return n == 400 }},
		{"first day", genStart, genStart.Add(24 * time.Hour), func(n int64) bool { return n == 200 }},
		{"second day, open end", genStart.Add(24 * time.Hour), time.Time{}, func(n int64) bool { return n == 200 }},
		{"an hour", genStart.Add(time.Hour), genStart.Add(2 * time.Hour), func(n int64) bool { return n > 0 && n < 20 }},
		{"before the log", genStart.Add(-48 * time.Hour), genStart.Add(-24 * time.Hour), func(n int64) bool { return n == 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			o.From, o.To = tt.from, tt.to
			r, err := Build(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.calls(r.Totals.Calls) {
				t.Errorf("%d calls", r.Totals.Calls)
			}
			if r.Totals.Tokens > all.Totals.Tokens || !r.Accounted {
				t.Errorf("tokens %d of %d, accounted %v", r.Totals.Tokens, all.Totals.Tokens, r.Accounted)
			}
		})
	}
	if _, err := Build(context.Background(), Options{Decisions: base.Decisions, From: genStart, To: genStart}); err == nil {
		t.Error("an empty range was accepted")
	}
	if _, err := Build(context.Background(), Options{Decisions: base.Decisions, By: "week"}); err == nil {
		t.Error("an unknown grouping was accepted")
	}
}

// A log that lacks part of a session (its older files rotated away, or
// usage reset) is said not to account for the ledger, naming the session.
func TestLedgerNotAccountedFor(t *testing.T) {
	base, _ := small(t)
	base.Ledger = append([]LedgerSession(nil), base.Ledger...)
	base.Ledger[0].Tokens += 1000
	r, err := Build(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	if r.Accounted || !strings.Contains(r.LedgerLine(), base.Ledger[0].Agent+"/"+base.Ledger[0].Session) {
		t.Errorf("accounted %v: %s", r.Accounted, r.LedgerLine())
	}
	if r.Ledger.Tokens != r.Totals.Tokens+1000 {
		t.Errorf("ledger tokens %d, log %d", r.Ledger.Tokens, r.Totals.Tokens)
	}
}

// What the agent chose (tool names, sessions) reaches a terminal escaped,
// a spreadsheet not as a formula, and the page as text; lines that are
// not entries are skipped and counted.
func TestHostileNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "decisions.jsonl")
	dl, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mask *events.Mask
	tool := "=HYPERLINK(\"x\")\x1b[31m<script>alert(1)</script>"
	red, _ := mask.Apply(events.ChargeInput{Role: "coder", Tool: tool, Session: "s\u202e1", Agent: "a"})
	at := genStart
	if err := dl.Log(events.Entry{DecisionID: "d", Path: events.PathCharge, Timestamp: at}, red, events.ChargeResult{Tokens: 5}); err != nil {
		t.Fatal(err)
	}
	dl.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json\n{\"path\":\"harness/decision\"}\n")
	f.Close()
	for _, by := range []string{ByTool, BySession} {
		r, err := Build(context.Background(), Options{Decisions: path, By: by})
		if err != nil {
			t.Fatal(err)
		}
		if r.Skipped != 2 || r.Totals.Tokens != 5 {
			t.Errorf("skipped %d, tokens %d", r.Skipped, r.Totals.Tokens)
		}
		var table, csv, html bytes.Buffer
		r.WriteTable(&table)
		r.WriteCSV(&csv)
		r.WriteHTML(&html, made)
		if strings.ContainsAny(table.String(), "\x1b\u202e") {
			t.Errorf("by %s: the table shows raw control characters:\n%q", by, table.String())
		}
		if by == ByTool && !strings.Contains(csv.String(), "'=HYPERLINK") {
			t.Errorf("the CSV leaves a formula:\n%s", csv.String())
		}
		if strings.Contains(html.String(), "<script>alert") {
			t.Errorf("by %s: the page holds the tool's markup", by)
		}
	}
}

// The HTML page is self-contained: no reference to anything outside it,
// and each chart is there.
func TestHTMLSelfContained(t *testing.T) {
	base, _ := small(t)
	r, err := Build(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.WriteHTML(&b, made); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// The one script it runs is the one its policy names by hash.
	script := page[strings.Index(page, "<script>")+len("<script>") : strings.Index(page, "</script>")]
	sum := sha256.Sum256([]byte(script))
	if want := "script-src 'sha256-" + strings.ReplaceAll(base64.StdEncoding.EncodeToString(sum[:]), "+", "&#43;") + "'"; !strings.Contains(page, want) {
		t.Errorf("the policy does not name the script's hash (%s)", want)
	}
	if strings.Contains(page, "script-src 'unsafe-inline'") || strings.Count(page, "<script") != 1 {
		t.Error("the page may run inline scripts other than its own")
	}
	for _, bad := range []string{"http://", "https://", "src=", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("the page refers out: %q", bad)
		}
	}
	for _, chart := range []string{`data-chart="tokens"`, `data-chart="cost"`, `data-chart="reasons"`, `data-chart="tools"`, `data-chart="usage"`, "<polyline", "mark-block"} {
		if !strings.Contains(page, chart) {
			t.Errorf("the page lacks %s", chart)
		}
	}
}

// The usage bars put their marks where the role warns and blocks.
func TestUsageBar(t *testing.T) {
	n := func(v int64) string { return "" }
	for _, tt := range []struct {
		name                     string
		used, limit, warn, block int64
		w, wm, bm                float64
		level                    string
	}{
		{"half", 50, 100, 80, 100, 100, 160, 200, "ok"},
		{"warning", 85, 100, 80, 100, 170, 160, 200, "warning"},
		{"exhausted", 100, 100, 80, 100, 200, 160, 200, "exhausted"},
		{"past the limit", 150, 100, 80, 100, 200, 106.7, 133.3, "exhausted"},
		{"blocks early", 60, 100, 50, 60, 120, 100, 120, "exhausted"},
		{"never blocks", 120, 100, 80, 255, 200, 133.3, 166.7, "warning"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := usageBar("tokens", tt.used, tt.limit, tt.warn, tt.block, 200, n)
			round := func(x float64) float64 { return float64(int(x*10+0.5)) / 10 }
			if round(d.W) != tt.w || round(d.Warn) != tt.wm || round(d.Block) != tt.bm || d.Level != tt.level {
				t.Errorf("%+v", d)
			}
		})
	}
	if d := usageBar("shell", 3, 0, 80, 100, 200, func(n int64) string { return "3" }); d.HasLimit || d.Marks || d.Text != "3 (no limit)" {
		t.Errorf("no limit: %+v", d)
	}
}

func TestRangeFlags(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		since, from, to string
		wantFrom        time.Time
		wantTo          time.Time
		err             bool
	}{
		{"", "", "", time.Time{}, time.Time{}, false},
		{"24h", "", "", now.Add(-24 * time.Hour), time.Time{}, false},
		{"7d", "", "", now.Add(-7 * 24 * time.Hour), time.Time{}, false},
		{"", "2026-12-01", "2026-12-02", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), false},
		{"", "2026-12-01T09:00:00+02:00", "", time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC), time.Time{}, false},
		{"24h", "2026-12-01", "", time.Time{}, time.Time{}, true},
		{"-1h", "", "", time.Time{}, time.Time{}, true},
		{"xd", "", "", time.Time{}, time.Time{}, true},
		{"", "yesterday", "", time.Time{}, time.Time{}, true},
		{"", "2026-12-02", "2026-12-01", time.Time{}, time.Time{}, true},
	} {
		f, to, err := Range(tt.since, tt.from, tt.to, now)
		if (err != nil) != tt.err || !tt.err && (!f.Equal(tt.wantFrom) || !to.Equal(tt.wantTo)) {
			t.Errorf("Range(%q, %q, %q) = %v, %v, %v", tt.since, tt.from, tt.to, f, to, err)
		}
	}
}
