package govern

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/events"
)

// BenchmarkDecideSinks measures a governed decision (counters, policy,
// shell reservation) without and with the event and decision logs (JSONL
// files) and a bus subscriber. The decision comes from the cache, so the
// sinks, a log line's JSON and its system calls, are most of it.
func BenchmarkDecideSinks(b *testing.B) {
	ctx := context.Background()
	e := engine(b)
	for _, tt := range []struct {
		name  string
		sinks bool
	}{{"off", false}, {"on", true}} {
		for _, call := range []struct {
			name string
			c    Call
		}{
			{"allow", Call{Tool: "ctx_read", Arguments: map[string]any{"path": "src/main.go"}}},
			{"deny", Call{Tool: "ctx_edit", Role: "reviewer", Arguments: map[string]any{"path": "src/main.go"}}},
		} {
			b.Run(tt.name+"/"+call.name, func(b *testing.B) {
				o := Options{Rules: Rules{Engine: e}, Store: budget.NewMemory()}
				if tt.sinks {
					dir := b.TempDir()
					ev, err := events.OpenEventLog(filepath.Join(dir, "events.jsonl"), events.DefaultRotation)
					if err != nil {
						b.Fatal(err)
					}
					defer ev.Close()
					dl, err := events.OpenDecisionLog(filepath.Join(dir, "decisions.jsonl"), events.DecisionLogOptions{
						Rotation: events.DefaultRotation, Labels: map[string]string{"app": "bench"}})
					if err != nil {
						b.Fatal(err)
					}
					if o.Mask, err = events.NewMask([]string{"/arguments/password"}); err != nil {
						b.Fatal(err)
					}
					defer dl.Close()
					bus := events.NewBus()
					sub := bus.Subscribe(1 << 16)
					defer sub.Close()
					o.Sinks, o.Decisions = []events.Sink{bus, ev}, dl
				}
				g := New(o)
				c := call.c
				c.Session = budget.Key{Agent: "bench", Session: "s"}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := g.Decide(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCharge measures what charging a small result costs on the
// SQLite ledger: settled before it is released (Settle: the policy's
// allowance, a compare-and-swap), against recorded after it (Record: an
// add), with the counters of the call's decision at hand or read again.
func BenchmarkCharge(b *testing.B) {
	ctx := context.Background()
	e := engine(b)
	store, err := budget.OpenSQLite(ctx, filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	g := New(Options{Rules: Rules{Engine: e}, Store: store})
	k := budget.Key{Agent: "bench", Session: "s"}
	o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_read"})
	if err != nil {
		b.Fatal(err)
	}
	out := Output{Session: k, Tool: "ctx_read", Arguments: `{"path":"x"}`, Parts: []Part{{Text: "contents of x\n"}}}
	b.Run("record", func(b *testing.B) {
		for b.Loop() {
			if _, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Arguments: `{"path":"x"}`, Output: "contents of x\n"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("settle", func(b *testing.B) {
		for b.Loop() {
			if _, err := g.Settle(ctx, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("settle-with-counters", func(b *testing.B) {
		cur := o.Counters
		for b.Loop() {
			o := out
			o.Counters = &cur
			st, err := g.Settle(ctx, o)
			if err != nil {
				b.Fatal(err)
			}
			cur = st.After
		}
	})
	b.Run("allowance", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Allowance(ctx, statusInput(k, o.Counters, "")); err != nil {
				b.Fatal(err)
			}
		}
	})
}
