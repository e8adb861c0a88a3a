package hookd

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/hookclient"
)

// slowPolicy is a custom policy whose evaluation takes minutes: a set
// comprehension over four nested iterations of a constant array (10⁸
// steps, a few hundred elements kept).
var slowPolicy = func() string {
	var xs []string
	for i := range 100 {
		xs = append(xs, fmt.Sprint(i))
	}
	return "package harness.custom.slow\n\nxs := [" + strings.Join(xs, ", ") + "]\n\n" +
		"deny contains msg if {\n" +
		"\tn := count({x | some a in xs; some b in xs; some c in xs; some d in xs; x := ((a + b) + c) + d})\n" +
		"\tn < 0\n" +
		"\tmsg := \"never\"\n" +
		"}\n"
}()

// slow adds the slow policy to the world's project.
func (w world) slow(t *testing.T) {
	t.Helper()
	write(t, filepath.Join(w.project, ".lean-ctx", "policies", "slow.rego"), slowPolicy)
	// The policy's own deadline (1 s by default) would deny first:
	// these tests are about the deadlines around it.
	write(t, filepath.Join(w.home, ".lean-ctx", "harness.toml"), "[policy]\ntimeout = \"1m\"\n")
}

// started waits until the session has started in the world's ledger: its
// call has been handed to the governor, which gives a new session its role
// before the policy decides.
func (w world) started(t *testing.T, session string) {
	t.Helper()
	path := filepath.Join(w.home, "state", "lean-ctx", "harness", "ledger.db")
	waitFor(t, "session "+session+" to start", func() bool {
		if _, err := os.Stat(path); err != nil {
			return false
		}
		s, err := budget.Open(context.Background(), "sqlite:"+path, budget.Options{})
		if err != nil {
			return false
		}
		defer s.Close()
		c, err := s.Get(context.Background(), budget.Key{Agent: hook.Agent, Session: session}, "")
		return err == nil && c.Role != ""
	})
}

// The deadlines nest: the daemon refuses a call before the hook process
// stops waiting for it, which is before the hook process's own deadline,
// well within the timeout Claude Code is given for the hook.
func TestDeadlinesNest(t *testing.T) {
	t.Parallel()
	if !(DecideTimeout < CallTimeout && CallTimeout < Deadline && Deadline <= hook.Timeout*3/4) {
		t.Errorf("decide %v, call %v, process %v, installed %v", DecideTimeout, CallTimeout, Deadline, hook.Timeout)
	}
	for _, tt := range []struct{ given, want time.Duration }{
		{0, Deadline}, {-time.Second, Deadline}, {time.Second, time.Second}, {Deadline, Deadline}, {time.Hour, Deadline},
	} {
		if got := (Client{Deadline: tt.given}).deadline(); got != tt.want {
			t.Errorf("deadline %v: %v, want %v", tt.given, got, tt.want)
		}
	}
}

// A hook process answers by its deadline whatever it is doing: reading
// its input, waiting for a daemon that does not answer, deciding in the
// process on a policy that takes minutes. A PreToolUse is refused, a
// PostToolUse is not charged.
func TestClientDeadline(t *testing.T) {
	t.Parallel()
	// A daemon that takes calls and never answers.
	dir, err := os.MkdirTemp("", "hookd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	mute := filepath.Join(dir, "mute.sock")
	l, err := net.Listen("unix", mute)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()

	for _, tt := range []struct {
		name   string
		event  string
		stdin  func(t *testing.T, w world) io.Reader
		socket string
		exit   int
		says   string
	}{
		{"reading the input", "PreToolUse", func(t *testing.T, w world) io.Reader {
			r, wr := io.Pipe() // never written to, never closed
			t.Cleanup(func() { wr.Close() })
			return r
		}, "", hook.ExitRefused, "refusing the call"},
		{"waiting for the daemon, PreToolUse", "PreToolUse", nil, mute, hook.ExitRefused, "refusing the call"},
		{"waiting for the daemon, PostToolUse", "PostToolUse", nil, mute, 0, "nothing was charged: stopping the agent"},
		{"deciding in the process", "PreToolUse", func(t *testing.T, w world) io.Reader {
			w.slow(t)
			return strings.NewReader(string(w.request(t, "PreToolUse", "slow").Payload))
		}, "", hook.ExitRefused, "refusing the call"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			req := w.request(t, tt.event, "c")
			var stdin io.Reader = strings.NewReader(string(req.Payload))
			if tt.stdin != nil {
				stdin = tt.stdin(t, w)
			}
			vars := map[string]string{"HOME": w.home, "LEAN_CTX_ROLE": "team", "XDG_STATE_HOME": filepath.Join(w.home, "state")}
			c := Client{Env: envOf(w.home, vars), Socket: tt.socket, Deadline: 300 * time.Millisecond}.client()
			// The answer in the process goes on, cancelled, after the
			// deadline, and writes the world's ledger and logs as it ends:
			// the test waits for it before the world is removed.
			c.Local = untilCleanup(t, c.Local)
			start := time.Now()
			r := c.Answer(context.Background(), stdin)
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("answered after %v", took)
			}
			if r.Exit != tt.exit || (len(r.Stdout) != 0) != (tt.event == "PostToolUse") || !strings.Contains(r.Stderr, "the harness did not answer within 300ms; "+tt.says) {
				t.Errorf("exit %d, stdout %q, stderr %q", r.Exit, r.Stdout, r.Stderr)
			}
		})
	}
}

// A daemon refuses a call it has not decided within its timeout, and goes
// on answering others.
func TestDaemonTimeout(t *testing.T) {
	t.Parallel()
	slow, fast := newWorld(t), newWorld(t)
	slow.slow(t)
	// Long enough for a call's first load, under the race detector on a
	// busy machine too.
	sock, _ := serve(t, Options{Timeout: 5 * time.Second})
	start := time.Now()
	r, ok := Call(sock, slow.request(t, "PreToolUse", "slow"))
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("answered after %v", took)
	}
	if !ok || r.Exit != hook.ExitRefused || !strings.Contains(r.Stderr, "the hook daemon did not decide the call within 5s; refusing the call") {
		t.Errorf("slow call: %v %+v", ok, r)
	}
	if r, ok := Call(sock, fast.request(t, "PreToolUse", "fast")); !ok || r.Exit != 0 || decision(t, r) != "" {
		t.Errorf("the next call: %v %+v", ok, r)
	}
}

// A daemon told to stop while a call is being decided refuses the call
// after the grace, and returns.
func TestDaemonStopsInFlight(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.slow(t)
	dir, err := os.MkdirTemp("", "hookd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "hook.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, Options{Socket: sock, Grace: 200 * time.Millisecond}) }()
	waitFor(t, "the daemon to listen", func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	answered := make(chan string, 1)
	go func() {
		r, ok := Call(sock, w.request(t, "PreToolUse", "in-flight"))
		answered <- fmt.Sprintf("%v %d %s", ok, r.Exit, r.Stderr)
	}()
	w.started(t, "in-flight")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not stop")
	}
	if got := <-answered; got != "true 2 harness hook: the hook daemon stopped before the call was decided; refusing the call\n" {
		t.Errorf("the call in flight: %s", got)
	}
}

// An answer the harness could not give says so: a PreToolUse is refused,
// a finished call is not charged, and stops the agent.
func TestUnanswered(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		payload, stderr string
		exit            int
	}{
		{`{"hook_event_name":"PreToolUse"}`, "harness hook: late; refusing the call\n", hook.ExitRefused},
		{`{"hook_event_name":"PostToolUse"}`, "harness hook: late; nothing was charged: stopping the agent\n", 0},
		{`{"hook_event_name":"PostToolUseFailure"}`, "harness hook: late; nothing was charged: stopping the agent\n", 0},
		{`{"hook_event_name":"SessionStart"}`, "harness hook: late; refusing the call\n", hook.ExitRefused},
		{``, "harness hook: late; refusing the call\n", hook.ExitRefused},
	} {
		r := Unanswered([]byte(tt.payload), "late")
		stop := `{"continue":false,"stopReason":"harness: late; what this tool call returned was not charged, so the agent is stopped (fix the cause, or run: harness check; then resume)"}` + "\n"
		if tt.exit == 0 && string(r.Stdout) != stop || tt.exit != 0 && len(r.Stdout) != 0 || r.Exit != tt.exit || r.Stderr != tt.stderr {
			t.Errorf("%s: %+v", tt.payload, r)
		}
	}
}

func envOf(home string, vars map[string]string) app.Env {
	return app.Env{WorkDir: home, Home: home, Getenv: func(k string) string { return vars[k] }}
}

// untilCleanup is local, which the test's cleanup waits for: a call that
// runs on past the test's end (its answer given up at a deadline) ends
// before the directories it writes are removed. A call after the cleanup
// began is not made.
func untilCleanup(t *testing.T, local func(context.Context, hookclient.Request) hookclient.Response) func(context.Context, hookclient.Request) hookclient.Response {
	var mu sync.Mutex
	var running sync.WaitGroup
	ended := false
	t.Cleanup(func() {
		mu.Lock()
		ended = true
		mu.Unlock()
		running.Wait()
	})
	return func(ctx context.Context, req hookclient.Request) hookclient.Response {
		mu.Lock()
		if ended {
			mu.Unlock()
			return hookclient.Response{Exit: hook.ExitRefused, Stderr: "the test has ended"}
		}
		running.Add(1)
		mu.Unlock()
		defer running.Done()
		return local(ctx, req)
	}
}
