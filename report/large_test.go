package report

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/internal/loggen"
	"github.com/agentharness/harness/internal/race"
)

// generated writes a log of calls decisions and charges a memory ledger
// with them; it returns the logs' paths and the ledger's sessions.
func generated(t testing.TB, calls int) (decisions, evs string, ledger []LedgerSession) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	decisions, evs = filepath.Join(dir, "decisions.jsonl"), filepath.Join(dir, "events.jsonl")
	store := budget.NewMemory()
	if _, err := loggen.Generate(ctx, loggen.Options{Decisions: decisions, Events: evs, Calls: calls, Agents: 4, Sessions: 200,
		Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Span: 10 * 24 * time.Hour, Seed: 17, Store: store}); err != nil {
		t.Fatal(err)
	}
	list, err := store.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		ledger = append(ledger, LedgerSession{Agent: s.Agent, Session: s.Session, Role: s.Role, Defined: true,
			Tokens: s.Tokens, Shell: s.Shell, CostMicros: s.CostMicros, Updated: s.Updated})
	}
	return decisions, evs, ledger
}

// A report over a generated log of 100,000 decisions (10,000 under the
// race detector; make test-grids runs it whole without it): its totals
// equal the ledger's, in every grouping, and the time it took is reported.
func TestLargeLogTotalsEqualTheLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 100,000 decisions")
	}
	calls := race.Size(100_000, 10)
	decisions, evs, ledger := generated(t, calls)
	var want Usage
	for _, s := range ledger {
		want.Tokens += s.Tokens
		want.Shell += s.Shell
		want.CostMicros += s.CostMicros
	}
	for _, by := range Groupings {
		start := time.Now()
		r, err := Build(context.Background(), Options{Decisions: decisions, Events: evs, By: by, Ledger: ledger})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("by %s: %d entries in %v", by, r.Entries, time.Since(start))
		got := Usage{Tokens: r.Totals.Tokens, Shell: r.Totals.Shell, CostMicros: r.Totals.CostMicros}
		if got != want || r.Ledger != want || !r.Accounted || r.Totals.Calls != int64(calls) || r.Skipped != 0 {
			t.Errorf("by %s: totals %+v, ledger %+v (accounted %v), want %+v; %d calls, %d skipped", by, got, r.Ledger, r.Accounted, want, r.Totals.Calls, r.Skipped)
		}
		var sum Counts
		for _, g := range r.Groups {
			sum.merge(g.Counts)
		}
		if sum.Tokens != want.Tokens || sum.Calls != r.Totals.Calls || sum.Allowed+sum.Warned+sum.Denied != sum.Calls {
			t.Errorf("by %s: the rows add up to %+v", by, sum)
		}
	}
}

// BenchmarkReport reads a generated log of 100,000 decisions (and their
// charges): target, under 2 s an operation on this machine.
func BenchmarkReport(b *testing.B) {
	decisions, evs, ledger := generated(b, 100_000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Build(context.Background(), Options{Decisions: decisions, Events: evs, By: ByAgent, Ledger: ledger}); err != nil {
			b.Fatal(err)
		}
	}
}
