package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// With a log mask that has a star (the README's /arguments/env/*), an
// agent's argument named "" under it once panicked while the decision was
// recorded, in the background: the gateway died with every session it
// served. The call is answered, and its secret is not in the log.
func TestMaskedEmptyKeyIsErased(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set, err := roles.Load(roles.Dirs{Project: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	e.SetBounds(policy.Bounds{Timeout: time.Minute})
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
	gov := govern.New(govern.Options{Rules: govern.Rules{Engine: e, Roles: set}, Store: budget.NewMemory(), Mask: mask, Decisions: dl,
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
