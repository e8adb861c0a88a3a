package hook

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// builtinRules are the rules of the built-in roles and the default
// configuration.
func builtinRules(t testing.TB) govern.Rules {
	t.Helper()
	set, err := roles.LoadDefs()
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	return govern.Rules{Engine: e, Roles: set, DefaultRole: roles.DefaultRole}
}

// A session's pin is asked of the ledger once per handler: it never
// changes, and writing it was the costliest step of a call the daemon
// answers. What is remembered is the ledger's answer, the project of the
// session's first call, whatever root a later call comes from.
func TestPinsAreRemembered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var asked atomic.Int32
	store := budget.Observed(budget.NewMemory(), func(op string, _ time.Duration, _ error) {
		if op == budget.OpPinProject {
			asked.Add(1)
		}
	})
	h := &ClaudeCode{Gov: govern.New(govern.Options{Rules: builtinRules(t), Store: store})}
	for _, tt := range []struct {
		session, root, want string
		asked               int32
	}{
		{"s", "/repo", "/repo", 1},
		{"s", "/elsewhere", "/repo", 1}, // cd'd out: still the first project, from memory
		{"s", "", "/repo", 1},
		{"t", "", "", 2}, // no project: nothing to pin, nothing remembered
		{"t", "/other", "/other", 3},
		{"t", "/repo", "/other", 3},
	} {
		got, err := h.Pin(ctx, []byte(`{"session_id":"`+tt.session+`"}`), tt.root)
		if err != nil || got != tt.want || asked.Load() != tt.asked {
			t.Errorf("session %s from %q: pinned to %q (%v), ledger asked %d times; want %q, %d", tt.session, tt.root, got, err, asked.Load(), tt.want, tt.asked)
		}
	}
}

// A finished call's input cut short (a hook reads at most 64 MiB) is no
// JSON: it is not charged, so it stops the agent; a PreToolUse's is
// refused.
func TestUnreadablePostToolUseStops(t *testing.T) {
	t.Parallel()
	h := &ClaudeCode{Gov: govern.New(govern.Options{Rules: builtinRules(t), Store: budget.NewMemory()})}
	for _, tt := range []struct {
		payload string
		stop    bool
	}{
		{`{"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_response": {"originalFile": "xxx`, true},
		{`{"session_id": "s", "hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "error": "cut`, true},
		{`{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "l`, false},
		{`{"session_id": "s", "hook_event_name": "PostToolUse"`, true},
		{`not json`, false},
	} {
		r := h.Handle(context.Background(), []byte(tt.payload))
		stopped := strings.Contains(string(r.Stdout), `"continue":false`) && r.Exit == 0
		if stopped != tt.stop || (!tt.stop && r.Exit != ExitRefused) {
			t.Errorf("%s: exit %d, stdout %q: want stopped %v", tt.payload, r.Exit, r.Stdout, tt.stop)
		}
	}
}
