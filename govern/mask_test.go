package govern

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy"
)

// quoting is a custom policy that quotes what it is given in its messages.
const quoting = `package harness.custom.quoting

deny contains sprintf("bad token %s", [input.arguments.Password]) if input.tool == "ctx_edit"

warn contains sprintf("shell by %s with %v", [input.session, input.arguments]) if input.tool == "ctx_shell"

switch_deny contains sprintf("session %s may not go to %s", [input.session, input.to]) if input.to == "debugger"
`

// The masks keep what they select out of every record a decision leaves:
// the logged input, the result's messages, the PolicyViolation of a deny,
// the budget events of a reservation and of a charge, a switch's entry
// and events.
func TestMasksReachNoRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set := testroles.Set(t, map[string]string{"tiny": "[role]\ninherits = \"coder\"\n[limits]\nmax_shell_invocations = 1\nmax_context_tokens = 10\n"})
	e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()), compiler.Module{Name: "policies/user/quoting.rego", Source: []byte(quoting)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dl, err := events.OpenDecisionLog(filepath.Join(dir, "decisions.jsonl"), events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	el, err := events.OpenEventLog(filepath.Join(dir, "events.jsonl"), events.DefaultRotation)
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close()
	mask, err := events.NewMask([]string{"/arguments/password", "/session"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	var failures []error
	g := New(Options{Rules: Rules{Engine: e}, Store: budget.NewMemory(), Sinks: []events.Sink{rec, el}, Decisions: dl, Mask: mask,
		OnError: func(err error) { failures = append(failures, err) }})
	const secret, session = "hunter2hunter2", "session-of-alice"
	k := budget.Key{Agent: "claude-code", Session: session}
	args := map[string]any{"PASSWORD": secret, "Password": secret, "path": "a.go"}
	if o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_edit", Role: "tiny", Arguments: args}); err != nil || o.Allowed {
		t.Fatalf("edit: %+v %v", o, err)
	}
	if o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Reserve: true, Arguments: args}); err != nil || !o.Reserved {
		t.Fatalf("shell: %+v %v", o, err)
	}
	if _, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Output: strings.Repeat("hello world ", 10)}); err != nil {
		t.Fatal(err)
	}
	if o, err := g.Switch(ctx, k, "debugger", contract.ByAgent); err != nil || o.Switched {
		t.Fatalf("switch: %+v %v", o, err)
	}
	if o, err := g.Switch(ctx, k, "reviewer", contract.ByAgent); err != nil || !o.Switched {
		t.Fatalf("switch: %+v %v", o, err)
	}
	if len(failures) > 0 {
		t.Fatal(failures)
	}
	for _, name := range []string{"decisions.jsonl", "events.jsonl"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{secret, session} {
			if strings.Contains(string(raw), v) {
				t.Errorf("%s holds the masked %q:\n%s", name, v, raw)
			}
		}
		if !strings.Contains(string(raw), events.Masked) {
			t.Errorf("%s shows no mask:\n%s", name, raw)
		}
	}
	var got []string
	for _, e := range rec.events {
		got = append(got, string(e.Type)+" "+e.Session)
		if e.Violation != nil {
			got[len(got)-1] += ": " + e.Reason
		}
	}
	want := []string{
		"PolicyViolation [masked]: policy: bad token [masked]",
		"BudgetWarning [masked]", "BudgetExhausted [masked]", // the shell slot
		"BudgetWarning [masked]", "BudgetExhausted [masked]", // the tokens of the output
		"PolicyViolation [masked]: switch_denied: harness.custom.quoting: session [masked] may not go to debugger",
		"RoleChanged [masked]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
