package govern

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/events"
)

// panicking is a sink that panics on every event.
type panicking struct{}

func (panicking) Emit(events.Event) error { panic("a sink's defect") }

// A panic while a decision is recorded (a sink's, the log's, the mask's) is
// an error the governor reports, not the end of the process that serves
// every session: in the background, as the gateway records, and inline,
// as the hook does.
func TestRecordingSurvivesAPanic(t *testing.T) {
	t.Parallel()
	e := engine(t)
	for _, background := range []bool{true, false} {
		var mu sync.Mutex
		var reported []error
		g := New(Options{Rules: Rules{Engine: e}, Store: budget.NewMemory(), Sinks: []events.Sink{panicking{}},
			OnError: func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }})
		c := Call{Session: budget.Key{Agent: "a", Session: "s"}, Tool: "ctx_edit", Role: "reviewer", Background: background}
		o, err := g.Decide(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		o.Wait()
		if o.Decision.Allowed {
			t.Fatalf("background %v: %+v", background, o.Decision)
		}
		mu.Lock()
		if len(reported) != 1 || !strings.Contains(reported[0].Error(), "a sink's defect") {
			t.Errorf("background %v: reported %v", background, reported)
		}
		mu.Unlock()
	}
}
