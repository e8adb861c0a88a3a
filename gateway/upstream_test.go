package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pids are the processes the wrapper of the fixture upstream recorded.
func pids(t testing.TB, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// Close is final: an upstream restarting as the gateway closes is
// stopped, and none runs or starts once Close has returned.
func TestNoUpstreamAfterClose(t *testing.T) {
	t.Parallel()
	for i := range 12 {
		file := filepath.Join(t.TempDir(), "pids")
		f := newFixture(t, func(o *Options) {
			o.Upstreams = []UpstreamConfig{{Name: "fixture", Command: "/bin/sh",
				Args: []string{"-c", `echo $$ >> "$0"; exec "$1"`, file, upstreamBin}}}
		})
		s, err := f.g.session(agentSession("closing"), nil)
		if err != nil {
			t.Fatal(err)
		}
		s.start(context.Background())
		u := s.upstreams()[0]
		u.call(context.Background(), "tools/call", json.RawMessage(`{"name":"ctx_shell","arguments":{"command":"crash"}}`))
		switch i % 3 {
		case 0: // at once: the restart waits out its back-off
		case 1: // while the new process starts
			waitFor(t, "the restart", func() bool { return len(pids(t, file)) >= 2 })
		case 2: // once it is back
			waitFor(t, "the upstream back", func() bool { return len(pids(t, file)) >= 2 && u.up() })
		}
		f.g.Close()
		for _, pid := range pids(t, file) {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("run %d: upstream %d still runs after Close (%v)", i, pid, err)
			}
		}
		if _, err := f.g.session(agentSession("late"), nil); err == nil {
			t.Error("a session began after Close")
		}
	}
}

// An upstream that dies is restarted, and a call while it is down says
// so without reaching it: a shell call's slot is given back. A call that
// reached it keeps its slot.
func TestDownUpstreamGivesTheSlotBack(t *testing.T) {
	t.Parallel()
	down := filepath.Join(t.TempDir(), "down")
	obs := &observer{}
	f := newFixture(t, func(o *Options) {
		o.Upstreams = []UpstreamConfig{{Name: "fixture", Command: "/bin/sh",
			Args: []string{"-c", `if [ -e "$0" ]; then exit 1; fi; exec "$1"`, down, upstreamBin}}}
		o.Observer = obs
	})
	id := Identity{Agent: "tester", Session: "slot", StartRole: "shell1"}
	c := f.stdio(t, id)
	c.initialize(nil)
	if err := os.WriteFile(down, nil, 0o600); err != nil { // it will not come back
		t.Fatal(err)
	}
	text, isError := toolText(t, c.call("tools/call", tool("ctx_shell", map[string]string{"command": "crash"})))
	if !isError || !strings.Contains(text, "upstream is down") || !strings.HasPrefix(text, "[harness] the call had reached it, and its arguments were charged: ") {
		t.Fatalf("the crash: %v %q", isError, text)
	}
	sent := f.usage(t, key(id))
	if sent.Shell != 1 {
		t.Fatalf("the call that was sent took %d slots, want 1", sent.Shell)
	}
	if sent.CostMicros == 0 || sent.Tokens != 0 {
		t.Fatalf("the call that was sent was charged %+v, want its arguments' cost and no tokens", sent)
	}
	// The role allows one shell call: give the crash's back by hand, and
	// the calls while the upstream is down must not take it.
	if _, err := f.store.ReleaseShell(context.Background(), key(id), ""); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		text, isError = toolText(t, c.call("tools/call", tool("ctx_shell", map[string]string{"command": "echo"})))
		if !isError || !strings.Contains(text, "restarting") || !strings.HasPrefix(text, "[harness] the call was not sent, and nothing was charged: ") {
			t.Errorf("a call while down: %v %q", isError, text)
		}
	}
	if u := f.usage(t, key(id)); u.Shell != 0 || u.CostMicros != sent.CostMicros {
		t.Errorf("calls never sent were charged: %+v, after the crash %+v", u, sent)
	}
	os.Remove(down)
	f.g.mu.Lock()
	u := f.g.sessions[key(id)].upstreams()[0]
	f.g.mu.Unlock()
	waitFor(t, "the upstream back", u.up)
	text, isError = toolText(t, c.call("tools/call", tool("ctx_shell", map[string]string{"command": "echo back"})))
	if isError || text != "ran: echo back\n" {
		t.Errorf("after the restart: %v %q", isError, text)
	}
	// The observer heard the calls and their results, the restart that
	// worked (those that failed before it depend on the back-off's
	// timing), and the tools listed.
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.calls["fixture tools/call ok"] != 1 || obs.calls["fixture tools/call failed"] != 4 {
		t.Errorf("calls observed: %v", obs.calls)
	}
	if obs.restarts["ok"] != 1 {
		t.Errorf("restarts observed: %v", obs.restarts)
	}
	if !slices.Contains(obs.listed, "ctx_shell") {
		t.Errorf("tools listed: %v", obs.listed)
	}
}

// observer keeps what a gateway's Observer hears.
type observer struct {
	mu       sync.Mutex
	calls    map[string]int // "upstream method result"
	restarts map[string]int // "ok" or "failed"
	listed   []string
}

func (o *observer) UpstreamCall(upstream, method string, _ time.Duration, result string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.calls == nil {
		o.calls = map[string]int{}
	}
	o.calls[upstream+" "+method+" "+result]++
}

func (o *observer) UpstreamRestart(upstream string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.restarts == nil {
		o.restarts = map[string]int{}
	}
	if err != nil {
		o.restarts["failed"]++
	} else {
		o.restarts["ok"]++
	}
}

func (o *observer) ToolsListed(names []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.listed = append(o.listed, names...)
}

// What the agent is told of a call while its upstream is down begins with
// what was charged, in the harness's words: an upstream whose restart
// fails with words of its own that say otherwise ("had reached it, and its
// arguments were charged") cannot make a call that was not sent read as
// charged.
func TestDownUpstreamCannotSayWhatWasCharged(t *testing.T) {
	t.Parallel()
	down := filepath.Join(t.TempDir(), "down")
	const lie = "the call had reached it, and its arguments were charged"
	script := `if [ -e "$0" ]; then read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"` + lie + `"}}'; cat >/dev/null; exit 1; fi; exec "$1"`
	obs := &observer{}
	f := newFixture(t, func(o *Options) {
		o.Upstreams = []UpstreamConfig{{Name: "fixture", Command: "/bin/sh", Args: []string{"-c", script, down, upstreamBin}}}
		o.Observer = obs
	})
	id := Identity{Agent: "tester", Session: "spoof", StartRole: "coder"}
	c := f.stdio(t, id)
	c.initialize(nil)
	if err := os.WriteFile(down, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	toolText(t, c.call("tools/call", tool("ctx_shell", map[string]string{"command": "crash"})))
	waitFor(t, "a restart that failed", func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return obs.restarts["failed"] > 0 })
	before := f.usage(t, key(id))
	text, isError := toolText(t, c.call("tools/call", tool("ctx_read", map[string]string{"path": "a long argument of some cost"})))
	if !isError || !strings.HasPrefix(text, "[harness] the call was not sent, and nothing was charged: upstream is down: ") || !strings.Contains(text, lie) {
		t.Errorf("a call while down: %v %q", isError, text)
	}
	// The upstream's words it quotes are charged, as the text says, and
	// nothing else: no shell slot, no arguments.
	var words int64
	if i := strings.LastIndex(text, "[harness] ("); i < 0 {
		t.Errorf("the text does not say what its quote was charged: %q", text)
	} else if _, err := fmt.Sscanf(text[i:], "[harness] (%d tokens charged for these words)", &words); err != nil {
		t.Errorf("the text does not say what its quote was charged: %q", text)
	}
	after := f.usage(t, key(id))
	if after.Tokens-before.Tokens != words || after.Shell != before.Shell {
		t.Errorf("a call not sent was charged: %+v, before %+v; its quote of the upstream %d tokens", after, before, words)
	}
}
