package govern

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

// Arguments an agent shapes against the decision log (long keys that cut
// alike over empty lists, past a line's bound; lists nested past what the
// log reads back) once made recording fail: the decision went unlogged
// and a refusal left no event. Each decision has its line, and each
// refusal and exhaustion its event, inline and in the background.
func TestHostileArgumentsAreRecorded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 80)
	colliding := map[string]any{"command": "echo", "pad": strings.Repeat("x", 70000), long + "1": []any{}, long + "2": []any{}}
	var deep any
	if err := json.Unmarshal([]byte(`{"command":"echo","pad":"`+strings.Repeat("y", 70000)+`","deep":`+strings.Repeat("[", 9999)+strings.Repeat("]", 9999)+`}`), &deep); err != nil {
		t.Fatal(err)
	}
	e := engineOf(t, map[string]string{"one": "[role]\ninherits = \"coder\"\n[limits]\nmax_shell_invocations = 1\n"})
	for _, args := range []any{colliding, deep} {
		for _, background := range []bool{false, true} {
			path := filepath.Join(t.TempDir(), "decisions.jsonl")
			dl, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			g := New(Options{Rules: Rules{Engine: e}, Store: budget.NewMemory(), Sinks: []events.Sink{rec}, Decisions: dl})
			k := budget.Key{Agent: "a", Session: "s"}
			for _, want := range []bool{true, false} { // the one shell call, then one past the budget
				o, err := g.Decide(context.Background(), Call{Session: k, Tool: "ctx_shell", Role: "one", Reserve: true, Arguments: args, Background: background})
				if err != nil {
					t.Fatal(err)
				}
				o.Wait()
				if o.Allowed != want {
					t.Fatalf("allowed %v: %+v", o.Allowed, o.Decision)
				}
			}
			dl.Close()
			b, _ := os.ReadFile(path)
			if n := strings.Count(string(b), `"path":"harness/decision"`); n != 2 || len(rec.of(events.PolicyViolation)) != 1 || len(rec.of(events.BudgetExhausted)) != 1 {
				t.Errorf("background %v: %d decisions logged, %d refusals and %d exhaustions emitted", background, n,
					len(rec.of(events.PolicyViolation)), len(rec.of(events.BudgetExhausted)))
			}
		}
	}
}
