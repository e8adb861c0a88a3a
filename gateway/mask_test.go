package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/roles"
)

// With a log mask that has a star (the README's /arguments/env/*), an
// agent's argument named "" under it once panicked while the decision was
// recorded, in the background: the gateway died with every session it
// served. The call is answered, and its secret is not in the log.
func TestMaskedEmptyKeyIsErased(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mask, err := events.NewMask([]string{"/arguments/env/*"})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "decisions.jsonl")
	dl, err := events.OpenDecisionLog(logPath, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	gov := govern.New(govern.Options{Rules: testRules(t, roles.Dirs{Project: []string{dir}}), Store: budget.NewMemory(), Mask: mask, Decisions: dl,
		OnError: func(err error) { t.Errorf("reported: %v", err) }})
	f := newFixture(t, func(o *Options) { o.Governor = gov })
	c := f.stdio(t, agentSession("mask"))
	c.initialize(nil)
	text, isError := toolText(t, c.call("tools/call", tool("ctx_read", map[string]any{"path": "x", "env": map[string]any{"": "hunter2", "A": "1"}})))
	if isError {
		t.Fatalf("the call: %q", text)
	}
	gov.Wait() // the charge's line too
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if log := string(b); strings.Contains(log, "hunter2") || !strings.Contains(log, `"erased":["/input/arguments/env/*"]`) {
		t.Errorf("the decision log:\n%s", log)
	}
}

// A call's decision is logged while its upstream works on it, not held
// back to its answer: the gateway starts writing the entry once the
// request is on its way (govern.Call.Later), and an upstream that never
// answers leaves the entry written all the same.
func TestDecisionLoggedWhileTheUpstreamWorks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "decisions.jsonl")
	dl, err := events.OpenDecisionLog(logPath, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gov := govern.New(govern.Options{Rules: testRules(t, roles.Dirs{Project: []string{dir}}), Store: budget.NewMemory(), Decisions: dl,
		OnError: func(err error) { t.Errorf("reported: %v", err) }})
	t.Cleanup(func() { gov.Wait(); dl.Close() }) // the last: after the session's end
	f := newFixture(t, func(o *Options) { o.Governor = gov })
	c := f.stdio(t, agentSession("under-way"))
	c.initialize(nil)
	id, _ := c.start("tools/call", tool("ctx_shell", map[string]string{"command": "hang"}))
	t.Cleanup(func() { // before the client hangs up, which waits for its calls
		c.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "done"})
	})
	waitFor(t, "the decision in the log", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), `"ctx_shell"`)
	})
	if f.g.inflightCount(true) != 1 {
		t.Errorf("%d calls under way upstream, want the one", f.g.inflightCount(true))
	}
}
