package report

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentharness/harness/events"
)

// A tool's name and a session's are the agent's. The CSV goes to a
// terminal as readily as the table does (harness report --csv), and the
// page's table of rows is read as its charts are: neither may hold what
// the table escapes (an OSC 52 write of the clipboard, C1 controls, a
// bidirectional override that shows a name as another).
func TestAttackCSVAndHTMLRowsShowControls(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "decisions.jsonl")
	dl, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mask *events.Mask
	tool := "evil\x1b]52;c;cm0gLXJmIH4K\x07\u009b2J\u202ellehs_xtc"
	red, _ := mask.Apply(events.ChargeInput{Role: "coder", Tool: tool, Session: "s\u202e1", Agent: "a\x1b[2K"})
	if err := dl.Log(events.Entry{DecisionID: "d", Path: events.PathCharge, Timestamp: genStart}, red, events.ChargeResult{Tokens: 5}); err != nil {
		t.Fatal(err)
	}
	dl.Close()
	const raw = "\x1b\x07\u009b\u202e"
	for _, by := range []string{ByTool, BySession, ByAgent} {
		r, err := Build(context.Background(), Options{Decisions: path, By: by})
		if err != nil {
			t.Fatal(err)
		}
		var csv, html bytes.Buffer
		if err := r.WriteCSV(&csv); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteHTML(&html, made); err != nil {
			t.Fatal(err)
		}
		if i := strings.IndexAny(csv.String(), raw); i >= 0 {
			t.Errorf("by %s: the CSV holds a raw control character (%s):\n%q", by, strconv.QuoteRune([]rune(csv.String()[i:])[0]), csv.String())
		}
		if i := strings.IndexAny(html.String(), raw); i >= 0 {
			t.Errorf("by %s: the page holds a raw control character (%s) near %q", by, strconv.QuoteRune([]rune(html.String()[i:])[0]), html.String()[max(0, i-80):i])
		}
	}
}

// The totals' row is keyed TOTAL; a tool (or a project's role) the agent
// names TOTAL is a row keyed TOTAL too, which sorts first: a script or a
// spreadsheet that looks up TOTAL in the CSV reads the agent's numbers,
// not the totals.
func TestAttackToolNamedTotal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "decisions.jsonl")
	dl, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mask *events.Mask
	for i, tool := range []string{"ctx_read", "TOTAL"} {
		red, _ := mask.Apply(events.ChargeInput{Role: "coder", Tool: tool, Session: "s", Agent: "a"})
		if err := dl.Log(events.Entry{DecisionID: "d" + strconv.Itoa(i), Path: events.PathCharge, Timestamp: genStart}, red, events.ChargeResult{Tokens: 1000 - 999*int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	dl.Close()
	r, err := Build(context.Background(), Options{Decisions: path, By: ByTool})
	if err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	if err := r.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count("\n"+csv.String(), "\nTOTAL,"); n != 1 {
		t.Errorf("%d rows keyed TOTAL:\n%s", n, csv.String())
	}
}

// Sessions are grouped by their whole key: agent "ci"'s session "S" and
// the session "ci/S" of no agent are two rows, not one row that adds the
// second's usage to the first's.
func TestAttackSessionsShareARow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	dl, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mask *events.Mask
	for i, in := range []events.ChargeInput{
		{Role: "coder", Tool: "ctx_read", Agent: "ci", Session: "S"},
		{Role: "coder", Tool: "ctx_read", Session: "ci/S"},
	} {
		red, _ := mask.Apply(in)
		if err := dl.Log(events.Entry{DecisionID: strconv.Itoa(i), Path: events.PathCharge, Timestamp: genStart}, red, events.ChargeResult{Tokens: int64(5 + 2*i)}); err != nil {
			t.Fatal(err)
		}
	}
	dl.Close()
	r, err := Build(context.Background(), Options{Decisions: path, By: BySession})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(r.Groups), r.Groups)
	}
	for _, g := range r.Groups {
		if want := map[string]int64{"S": 5, "ci/S": 7}[g.Session]; g.Tokens != want {
			t.Errorf("row %q (agent %q, session %q): %d tokens, want %d", g.Key, g.Agent, g.Session, g.Tokens, want)
		}
	}
}
