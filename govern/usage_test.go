package govern

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/pricing"
	"github.com/agentharness/harness/transcript"
)

// The cost of a session whose agent records its model usage is that
// usage at the models' prices (cache writes and reads included), and the
// estimate of its tool calls is not charged on top; a session with a
// transcript that records nothing is charged the estimate; the operator's
// reset starts both again.
func TestTranscriptCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home, path, empty := transcripts(t)
	store := budget.NewMemory()
	var warnings []string
	g := New(Options{Rules: Rules{Engine: engine(t)}, Store: store, Transcripts: transcript.Open(filepath.Join(t.TempDir(), "transcripts"), home, transcript.DefaultLimits),
		OnError: func(err error) { warnings = append(warnings, err.Error()) }})
	prices := pricing.Default()
	cost := func(model string, u pricing.Usage) int64 {
		p, _, _ := prices.Lookup(model)
		c, err := p.Of(u)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	real := cost("claude-sonnet-4-5", req1) + cost("claude-opus-4-5", req2)
	k := budget.Key{Agent: "claude-code", Session: "s"}
	used := func() budget.Counters {
		c, err := store.Get(ctx, k, "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// Before a call: what the transcript records is charged.
	if _, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_read", Transcript: path}); err != nil {
		t.Fatal(err)
	}
	if c := used(); c.CostMicros != real || c.Tokens != 0 {
		t.Fatalf("after the first decision: %+v, want cost %d", c, real)
	}
	// After it: its output's tokens; its estimated cost is within the real cost.
	ch, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Output: strings.Repeat("hello world ", 100), Transcript: path})
	if err != nil || ch.OutputTokens == 0 || ch.CostMicros != 0 || ch.Source != transcript.SourceTranscript {
		t.Fatalf("record: %+v %v", ch, err)
	}
	if c := used(); c.CostMicros != real || c.Tokens != ch.OutputTokens {
		t.Errorf("after the record: %+v", c)
	}
	// The next request the agent makes is charged when it is written.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"type":"assistant","requestId":"req_next","message":{"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":7,"cache_read_input_tokens":30000,"output_tokens":400}}}` + "\n")
	f.Close()
	next := cost("claude-sonnet-4-5", pricing.Usage{Input: 7, CacheRead: 30000, Output: 400})
	if _, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_read", Transcript: path}); err != nil {
		t.Fatal(err)
	}
	if c := used(); c.CostMicros != real+next {
		t.Errorf("after the next request: %d, want %d", c.CostMicros, real+next)
	}
	tally, ok, err := g.CostSource(k)
	if !ok || err != nil || tally.Source() != transcript.SourceTranscript || tally.RealMicros != real+next || tally.Requests != 3 {
		t.Errorf("tally %+v %v %v", tally, ok, err)
	}

	// A transcript that records nothing: the estimate.
	e := budget.Key{Agent: "claude-code", Session: "e"}
	ch, err = g.Record(ctx, Result{Session: e, Tool: "ctx_read", Output: strings.Repeat("hello world ", 100), Transcript: empty})
	if err != nil || ch.CostMicros == 0 || ch.Source != transcript.SourceEstimate {
		t.Errorf("an empty transcript: %+v %v", ch, err)
	}
	// The operator's reset: charging starts again from nothing.
	if err := g.Reset(ctx, k); err != nil {
		t.Fatal(err)
	}
	ch, err = g.Record(ctx, Result{Session: k, Tool: "ctx_read", Output: "hello", Transcript: path})
	if err != nil || ch.CostMicros == 0 {
		t.Errorf("after a reset: %+v %v", ch, err)
	}
	// A transcript outside the home is not read, said once; the estimate is charged.
	o := budget.Key{Agent: "claude-code", Session: "o"}
	for range 2 {
		if ch, err := g.Record(ctx, Result{Session: o, Tool: "ctx_read", Output: "hello", Transcript: "/etc/x.jsonl"}); err != nil || ch.CostMicros == 0 {
			t.Errorf("outside the home: %+v %v", ch, err)
		}
	}
	if n := strings.Count(strings.Join(warnings, "\n"), "outside the home directory"); n != 1 {
		t.Errorf("warnings %q", warnings)
	}
}

// transcripts is a home with two of Claude Code's transcripts in it: path,
// which records two requests (req1 and req2), and empty.
func transcripts(t *testing.T) (home, path, empty string) {
	t.Helper()
	home = t.TempDir()
	whole, err := os.ReadFile("../transcript/testdata/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".claude", "projects", "app")
	os.MkdirAll(dir, 0o700)
	path, empty = filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "empty.jsonl")
	os.WriteFile(path, whole, 0o600)
	os.WriteFile(empty, nil, 0o600)
	return home, path, empty
}

var (
	req1 = pricing.Usage{Input: 3, CacheWrite: 4000, CacheRead: 20000, Output: 310}
	req2 = pricing.Usage{Input: 5, CacheWrite1h: 500, CacheRead: 24000, Output: 80}
)

// Two sessions that differ as keys share no transcript book entry, even
// when one's agent and session, joined with a '/', spell the other's
// session: agent "" with session "ci/S" and agent "ci" with session "S".
// Sharing one, the second session's tally counted the first's requests,
// and the estimate charged to the second was taken off the first's next
// recorded request (the shared tally was brought down to the second's
// ledger): a session's cost moved to another's budget.
func TestAttackTranscriptBookSharedAcrossKeys(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]budget.Key{
		{{Agent: "ci", Session: "S"}, {Session: "ci/S"}},
		{{Agent: "a/b", Session: "c"}, {Agent: "a", Session: "b/c"}},
		{{Agent: "a", Session: "b/c"}, {Session: "a/b/c"}},
		{{Agent: "a%2Fb", Session: "c"}, {Agent: "a/b", Session: "c"}},
	} {
		t.Run(pair[0].Agent+"|"+pair[0].Session+" vs "+pair[1].Agent+"|"+pair[1].Session, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			home, path, empty := transcripts(t)
			store := budget.NewMemory()
			g := New(Options{Rules: Rules{Engine: engine(t)}, Store: store,
				Transcripts: transcript.Open(filepath.Join(t.TempDir(), "transcripts"), home, transcript.DefaultLimits)})
			// The first session's agent records its usage: a real cost.
			if _, err := g.Decide(ctx, Call{Session: pair[0], Tool: "ctx_read", Transcript: path}); err != nil {
				t.Fatal(err)
			}
			// The second's records none: each call costs it its estimate.
			ch, err := g.Record(ctx, Result{Session: pair[1], Tool: "ctx_read", Output: strings.Repeat("hello world ", 100), Transcript: empty})
			if err != nil {
				t.Fatal(err)
			}
			if ch.CostMicros == 0 || ch.Source != transcript.SourceEstimate {
				t.Errorf("the second session's call was charged %d µ$ from the %s: its estimate was absorbed by the first session's recorded usage", ch.CostMicros, ch.Source)
			}
			if tally, _, _ := g.CostSource(pair[1]); tally.Requests != 0 {
				t.Errorf("the second session's tally counts the first's %d requests", tally.Requests)
			}
			// The first session's next request is charged whole, not less
			// the second's estimate.
			before, _ := store.Get(ctx, pair[0], "")
			f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"type":"assistant","requestId":"req_next","message":{"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":7,"cache_read_input_tokens":30000,"output_tokens":400}}}` + "\n")
			f.Close()
			if _, err := g.Decide(ctx, Call{Session: pair[0], Tool: "ctx_read", Transcript: path}); err != nil {
				t.Fatal(err)
			}
			p, _, _ := pricing.Default().Lookup("claude-sonnet-4-5")
			next, _ := p.Of(pricing.Usage{Input: 7, CacheRead: 30000, Output: 400})
			if after, _ := store.Get(ctx, pair[0], ""); after.CostMicros-before.CostMicros != next {
				t.Errorf("the first session's next request was charged %d µ$, want %d", after.CostMicros-before.CostMicros, next)
			}
		})
	}
}
