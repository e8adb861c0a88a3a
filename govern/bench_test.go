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
// files) and a bus subscriber. Target: the sinks add under 20%.
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
