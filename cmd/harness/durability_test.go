package main

// Issue 14, item 3: no result without its charge. harness serve is killed
// with SIGKILL at random points of its calls; afterwards the ledger must
// hold the charge of every result the client received, and no charge twice:
// what it holds beyond the received results is the charge of some of the
// calls that were in flight at the kill (all of one call's charge or none of
// it), and a gateway started again on the same session charges its next
// call once, replaying nothing.
//
// $HARNESS_DURABILITY_RUNS sets the number of kills (default 10, which make
// test runs); make durability runs 200.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentharness/harness/pricing"
)

// durableRole's limits are never reached in a test, so that every call is
// charged in full and the harness adds nothing to a result (a warning, which
// is not charged). (A limit of 0 is never exhausted, but warns "at 100%"
// from the first token on.)
const durableRole = "[role]\ninherits = \"coder\"\n\n[limits]\nmax_context_tokens = 1000000000000\nmax_cost_usd = 1000000\nmax_shell_invocations = 1000000\n"

// patientPolicy lifts the policy's deadline: dozens of evaluations at
// once on a small, busy machine (and under the race detector) can each take
// longer than the default 250 ms of wall-clock time, and are then refused
// (evaluation_error), as they should be; the tests that use it are about
// what is charged, not about deadlines.
const patientPolicy = "[policy]\ntimeout = \"30s\"\n"

// fixtureText is what the fixture upstream's ctx_read returns for bytes=n
// (testdata/upstream: text).
func fixtureText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of the file: the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()[:n]
}

// rawCall is one tool call as the durability test makes it: its arguments
// exactly as sent (their tokens are the charge's input), and what the
// gateway must charge for it.
type rawCall struct {
	tool string
	args string
	want string // the result's text
	// The charge: output tokens, shell slots, micro-dollars.
	tokens, shell, cost int64
}

// durableCalls are the calls a run makes, small to large, and a shell
// call (which also takes a shell slot).
func durableCalls(t *testing.T) []rawCall {
	t.Helper()
	tk := newTokenizer()
	prices := pricing.Default()
	var calls []rawCall
	add := func(tool, args, want string, shell int64) {
		out, err := tk.Count(want)
		if err != nil {
			t.Fatal(err)
		}
		in, err := tk.Count(args)
		if err != nil {
			t.Fatal(err)
		}
		cost, err := prices.Cost("", in, out)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, rawCall{tool: tool, args: args, want: want, tokens: out, shell: shell, cost: cost})
	}
	for _, n := range []int{1000, 100_000, 1_000_000, 3_000_000} {
		add("ctx_read", fmt.Sprintf(`{"bytes":%d}`, n), fixtureText(n), 0)
	}
	add("ctx_shell", `{"command":"echo durable"}`, "ran: echo durable\n", 1)
	return calls
}

// rawStdio is harness serve over stdio, driven a JSON-RPC line at a time:
// a response counts as received once its whole line has been read.
type rawStdio struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	wmu     sync.Mutex // one message written at a time
	mu      sync.Mutex
	next    int
	waiting map[int]chan json.RawMessage
	dead    chan struct{}
}

// startRaw starts harness serve with args in home, in a process group of
// its own (so that its upstream goes with it).
func startRaw(t *testing.T, home string, args ...string) *rawStdio {
	t.Helper()
	harnessBin, upstreamBin := buildBinaries(t)
	cmd := exec.Command(harnessBin, append(append([]string{"serve"}, args...), "--", upstreamBin)...)
	cmd.Env = cleanEnv(home)
	cmd.Dir = home
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &rawStdio{cmd: cmd, stdin: stdin, waiting: map[int]chan json.RawMessage{}, dead: make(chan struct{})}
	t.Cleanup(func() {
		g.kill()
		if t.Failed() {
			t.Logf("harness serve's stderr:\n%s", stderr.String())
		}
	})
	go g.read(stdout)
	return g
}

// cleanEnv is the environment of a harness process with home as its
// home: none of the harness's own variables of the process running the
// tests.
func cleanEnv(home string) []string {
	env := []string{"HOME=" + home}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "HARNESS_") || strings.HasPrefix(k, "LEAN_CTX_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (g *rawStdio) read(stdout io.Reader) {
	defer func() {
		g.mu.Lock()
		for id, ch := range g.waiting {
			close(ch)
			delete(g.waiting, id)
		}
		close(g.dead)
		g.mu.Unlock()
	}()
	r := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return // a line cut by the kill is not received
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method != "" {
			continue // a notification, or a request of the gateway's
		}
		g.mu.Lock()
		ch := g.waiting[*m.ID]
		delete(g.waiting, *m.ID)
		g.mu.Unlock()
		if ch != nil {
			ch <- bytes.Clone(line)
		}
	}
}

// request sends a request and waits for its response line; false if the
// gateway died first. sent is called just before the request is written.
func (g *rawStdio) request(method, params string, sent func()) (json.RawMessage, bool) {
	g.mu.Lock()
	select {
	case <-g.dead:
		g.mu.Unlock()
		return nil, false
	default:
	}
	g.next++
	id := g.next
	ch := make(chan json.RawMessage, 1)
	g.waiting[id] = ch
	g.mu.Unlock()
	if sent != nil {
		sent()
	}
	g.wmu.Lock()
	_, err := fmt.Fprintf(g.stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
	g.wmu.Unlock()
	if err != nil {
		return nil, false
	}
	resp, ok := <-ch
	return resp, ok
}

func (g *rawStdio) notify(method string) {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	fmt.Fprintf(g.stdin, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
}

func (g *rawStdio) initialize(t *testing.T) {
	t.Helper()
	if _, ok := g.request("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"durability","version":"1"}}`, nil); !ok {
		t.Fatal("the gateway died before it answered initialize")
	}
	g.notify("notifications/initialized")
}

// call makes a tool call; ok is whether its result was received, and
// then it is checked to be the call's whole, successful result.
func (g *rawStdio) call(c rawCall, sent func()) (ok bool, err error) {
	line, ok := g.request("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, c.tool, c.args), sent)
	if !ok {
		return false, nil
	}
	var resp struct {
		Result struct {
			Content []struct {
				Type, Text string
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return true, err
	}
	if resp.Error != nil || resp.Result.IsError || len(resp.Result.Content) != 1 || resp.Result.Content[0].Text != c.want {
		n := 0
		if len(resp.Result.Content) > 0 {
			n = len(resp.Result.Content[0].Text)
		}
		d := 0
		for d < n && d < len(c.want) && resp.Result.Content[0].Text[d] == c.want[d] {
			d++
		}
		return true, fmt.Errorf("%v %v %d %q %s %s: not the whole result (%d bytes of text, want %d, differ at %d: %q vs %q)", resp.Error != nil, resp.Result.IsError, len(resp.Result.Content), resp.Result.Content[len(resp.Result.Content)-1].Text, c.tool, c.args, n, len(c.want), d, resp.Result.Content[0].Text[d:min(n, d+80)], c.want[d:min(len(c.want), d+80)])
	}
	return true, nil
}

// kill is kill -9 of the gateway, then of what is left of its group (its
// upstream), and waits for it.
func (g *rawStdio) kill() {
	if g.cmd.ProcessState != nil {
		return
	}
	g.cmd.Process.Signal(syscall.SIGKILL)
	syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	g.stdin.Close()
	g.cmd.Wait()
	<-g.dead
}

// closeCleanly ends the client's side and waits for the gateway to exit.
func (g *rawStdio) closeCleanly(t *testing.T) {
	t.Helper()
	g.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("harness serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("harness serve did not exit after its client closed stdin")
		g.kill()
	}
}

// ledgerUsage is what the ledger holds for a session, read as the operator
// reads it; nothing for a session it does not have (killed before its first
// decision).
func ledgerUsage(t *testing.T, home, project, session string) (tokens, shell, cost int64) {
	t.Helper()
	out, errOut, code := harnessIn(t, home, nil, "budget", "--project", project, "--session", session, "--json")
	if code == exitError && strings.Contains(errOut, "no session "+session+" in the ledger") {
		return 0, 0, 0
	}
	if code != exitOK {
		t.Fatalf("harness budget --session %s: exit %d\n%s%s", session, code, out, errOut)
	}
	var st struct {
		Budget struct {
			Tokens, Shell, Cost struct{ Used int64 }
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("harness budget --json: %v\n%s", err, out)
	}
	return st.Budget.Tokens.Used, st.Budget.Shell.Used, st.Budget.Cost.Used
}

func durabilityRuns(t *testing.T) int {
	n := 10
	if v := os.Getenv("HARNESS_DURABILITY_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("HARNESS_DURABILITY_RUNS=%q: want a positive number", v)
		}
	}
	return n
}

func TestKilledGatewayLosesNoCharge(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "roles", "durable.toml"), durableRole) // a user's: a project's beyond the ceiling decides nothing
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), patientPolicy)
	calls := durableCalls(t)
	serve := func(session string) *rawStdio {
		g := startRaw(t, home, "--project", project, "--role", "durable", "--session", session)
		g.initialize(t)
		return g
	}

	// Each call, unkilled, is charged what the test says it costs.
	g := serve("calibration")
	var tokens, shell, cost int64
	for _, c := range calls {
		if ok, err := g.call(c, nil); !ok || err != nil {
			t.Fatalf("calibration: %v %v", ok, err)
		}
		t0, s0, c0 := tokens, shell, cost
		tokens, shell, cost = ledgerUsage(t, home, project, "calibration")
		if tokens-t0 != c.tokens || shell-s0 != c.shell || cost-c0 != c.cost {
			t.Fatalf("%s %s was charged %d tokens, %d shell, %d µ$; the test works out %d, %d, %d",
				c.tool, c.args, tokens-t0, shell-s0, cost-c0, c.tokens, c.shell, c.cost)
		}
	}
	g.closeCleanly(t)

	runs := durabilityRuns(t)
	var chargedUnreceived, slotsOnly, unchargedInFlight, idle, received int
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 14))
	for run := range runs {
		session := fmt.Sprintf("run-%d", run)
		g := serve(session)
		var (
			mu       sync.Mutex
			got      []rawCall           // results received
			inFlight = map[int]rawCall{} // sent, not (yet) received, by worker
			failures []error
		)
		workers := 1 + rng.IntN(3)
		var wg sync.WaitGroup
		for w := range workers {
			seed := rng.Uint64()
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, uint64(w)))
				for {
					c := calls[r.IntN(len(calls))]
					ok, err := g.call(c, func() { mu.Lock(); inFlight[w] = c; mu.Unlock() })
					mu.Lock()
					if ok {
						delete(inFlight, w)
						got = append(got, c)
						if err != nil {
							failures = append(failures, err)
						}
					}
					mu.Unlock()
					if !ok {
						return
					}
				}
			})
		}
		// The fault: kill -9 after a random time, anywhere in a call
		// (calls take from a fraction of a millisecond to some 200 ms).
		time.Sleep(time.Duration(rng.Int64N(int64(600 * time.Millisecond))))
		g.kill()
		wg.Wait()
		for _, err := range failures {
			t.Errorf("run %d: %v", run, err)
		}

		var want rawCall
		for _, c := range got {
			want.tokens, want.shell, want.cost = want.tokens+c.tokens, want.shell+c.shell, want.cost+c.cost
		}
		tokens, shell, cost := ledgerUsage(t, home, project, session)
		// What the ledger holds beyond the received results must be
		// the charges of calls in flight at the kill, each whole or not
		// made: a call takes its shell slot when it is decided, and its
		// tokens and cost when its result is settled, so a shell call in
		// flight may have taken its slot and nothing more.
		var pending []rawCall
		for _, c := range inFlight {
			pending = append(pending, c)
		}
		states := 1
		for range pending {
			states *= 3
		}
		match, slotOnly, settled := false, 0, 0
		for combo := range states {
			extra, slots, full := rawCall{}, 0, 0
			for i, x := 0, combo; i < len(pending); i, x = i+1, x/3 {
				switch c := pending[i]; x % 3 {
				case 1:
					if c.shell == 0 {
						continue
					}
					extra.shell += c.shell
					slots++
				case 2:
					extra.tokens, extra.shell, extra.cost = extra.tokens+c.tokens, extra.shell+c.shell, extra.cost+c.cost
					full++
				}
			}
			if tokens == want.tokens+extra.tokens && shell == want.shell+extra.shell && cost == want.cost+extra.cost {
				match, slotOnly, settled = true, slots, full
				break
			}
		}
		received += len(got)
		switch {
		case !match:
			var names []string
			for _, c := range pending {
				names = append(names, c.tool+" "+c.args)
			}
			t.Errorf("run %d: the ledger holds %d tokens, %d shell, %d µ$; the %d results received cost %d, %d, %d, and the calls in flight at the kill are %q",
				run, tokens, shell, cost, len(got), want.tokens, want.shell, want.cost, names)
		case len(pending) == 0:
			idle++
		case settled > 0:
			chargedUnreceived++
		case slotOnly > 0:
			slotsOnly++
		default:
			unchargedInFlight++
		}

		// Started again on the session, the gateway charges its next
		// call once, and nothing else.
		g = serve(session)
		c := calls[0]
		if ok, err := g.call(c, nil); !ok || err != nil {
			t.Fatalf("run %d, after the restart: %v %v", run, ok, err)
		}
		g.closeCleanly(t)
		if t2, s2, c2 := ledgerUsage(t, home, project, session); t2 != tokens+c.tokens || s2 != shell+c.shell || c2 != cost+c.cost {
			t.Errorf("run %d: one call after the restart took the counters from %d, %d, %d to %d, %d, %d; it costs %d, %d, %d",
				run, tokens, shell, cost, t2, s2, c2, c.tokens, c.shell, c.cost)
		}
	}
	t.Logf("%d kills, %d results received in all. At the kill, %d runs had a call charged whose result had not reached the client; "+
		"%d had a shell call in flight that had taken its slot only; %d had calls in flight not yet charged; %d had none in flight",
		runs, received, chargedUnreceived, slotsOnly, unchargedInFlight, idle)
}
