//go:build soak

package soak

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // the ledger's own driver, for the lock

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/pricing"
)

// The run's size: $SOAK_CLIENTS clients for $SOAK_DURATION.
func size(t *testing.T) (clients int, d time.Duration) {
	clients, d = 20, 60*time.Second
	if v := os.Getenv("SOAK_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SOAK_CLIENTS=%q", v)
		}
		clients = n
	}
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 5*time.Second {
			t.Fatalf("SOAK_DURATION=%q: want 5s or more", v)
		}
	}
	return clients, d
}

// Bounds on the gateway's growth, stated in the README: from the first
// tenth of the load to its end, the resident memory grows by at most
// maxRSSGrowth; with the clients' sessions open and no call under way, the
// goroutines after the load are at most maxGoroutineGrowth more than before
// it; and once the clients have ended their sessions, they are back within
// maxGoroutinesLeft of the idle gateway's.
const (
	maxRSSGrowth       = 64 << 20
	maxGoroutineGrowth = 5
	maxGoroutinesLeft  = 5
)

// TestSoak: the load alone, on each ledger.
func TestSoak(t *testing.T) {
	for _, ledger := range []string{"sqlite", "redis"} {
		t.Run(ledger, func(t *testing.T) { soak(t, ledger, false) })
	}
}

// TestChaos: the load while the upstreams are killed, Redis is restarted
// (killed once, shut down once) and the SQLite file is locked by another
// process for 2 s.
func TestChaos(t *testing.T) {
	for _, ledger := range []string{"sqlite", "redis"} {
		t.Run(ledger, func(t *testing.T) { soak(t, ledger, true) })
	}
}

// TestLockHelper is the other process that locks the SQLite ledger: run
// by the chaos run as this test binary with $SOAK_LOCK set to the file.
func TestLockHelper(t *testing.T) {
	path := os.Getenv("SOAK_LOCK")
	if path == "" {
		t.Skip("the chaos run's helper process")
	}
	hold, _ := time.ParseDuration(os.Getenv("SOAK_LOCK_FOR"))
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	fmt.Println("locked")
	time.Sleep(hold) // the fault: the file stays locked this long
	if _, err := conn.ExecContext(context.Background(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	fmt.Println("unlocked")
}

var binaries struct {
	once              sync.Once
	harness, upstream string
	err               error
}

func build(t *testing.T) (harnessBin, upstreamBin string) {
	t.Helper()
	binaries.once.Do(func() {
		dir, err := os.MkdirTemp("", "harness-soak-bin")
		if err != nil {
			binaries.err = err
			return
		}
		binaries.harness, binaries.upstream = filepath.Join(dir, "harness"), filepath.Join(dir, "upstream")
		for pkg, out := range map[string]string{"../../cmd/harness": binaries.harness, "../../testdata/upstream": binaries.upstream} {
			if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
				binaries.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return binaries.harness, binaries.upstream
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cleanEnv is the environment of a process with home as its home, without
// the harness's variables of the process running the tests.
func cleanEnv(home string, extra ...string) []string {
	env := []string{"HOME=" + home}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "HARNESS_") || strings.HasPrefix(k, "LEAN_CTX_") || k == "GOGC" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// redisServer is a redis-server of the run's own, on a fixed port and
// directory so that it can be restarted; with an append-only file synced
// on every write, so that a kill -9 loses no acknowledged change.
type redisServer struct {
	t    *testing.T
	dir  string
	port int
	cmd  *exec.Cmd
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	r := &redisServer{t: t, dir: t.TempDir(), port: freePort(t)}
	r.start()
	t.Cleanup(func() { r.stop(syscall.SIGKILL) })
	return r
}

func (r *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func (r *redisServer) start() {
	r.t.Helper()
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(r.port), "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "yes")
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.Contains(s.Text(), "Ready to accept connections") {
				close(ready)
				break
			}
		}
		for s.Scan() {
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		r.t.Fatal("redis-server did not start")
	}
	r.cmd = cmd
}

func (r *redisServer) stop(sig syscall.Signal) {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Signal(sig)
	r.cmd.Wait()
	r.cmd = nil
}

// gateway is harness serve --http, with its runtime profiles on
// HARNESS_DEBUG_ADDR.
type gateway struct {
	cmd      *exec.Cmd
	url      string
	debugURL string
	stderr   *lockedBuffer
}

func startGateway(t *testing.T, harnessBin, home, project string) *gateway {
	t.Helper()
	addr, debug := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(harnessBin, "serve", "--http", addr, "--project", project)
	cmd.Env = cleanEnv(home, "HARNESS_DEBUG_ADDR="+debug)
	if dir := os.Getenv("SOAK_OUT"); dir != "" {
		cmd.Env = append(cmd.Env, "UPSTREAM_STACKS="+dir) // the upstreams' stacks, for stuck
	}
	cmd.Dir = home
	g := &gateway{cmd: cmd, url: "http://" + addr + "/mcp", debugURL: "http://" + debug, stderr: &lockedBuffer{}}
	cmd.Stderr = g.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := g.goroutines(); err == nil {
			if resp, err := http.Post(g.url, "application/json", strings.NewReader("{}")); err == nil {
				resp.Body.Close()
				return g
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("harness serve --http never listened:\n%s", g.stderr.String())
		}
	}
}

var goroutineTotal = regexp.MustCompile(`goroutine profile: total (\d+)`)

func (g *gateway) goroutines() (int, error) {
	resp, err := http.Get(g.debugURL + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(resp.Body, head)
	m := goroutineTotal.FindSubmatch(head[:n])
	if m == nil {
		return 0, fmt.Errorf("no goroutine count in %q", head[:n])
	}
	return strconv.Atoi(string(m[1]))
}

// stuckAfter is how long a call runs before the soak records what the
// gateway and its upstreams are doing (stuck): a call of the mix takes
// milliseconds, so one that runs this long is hung, or close to it.
const stuckAfter = 20 * time.Second

// stuck records, for a call that has run stuckAfter, the gateway's
// goroutines (each with its stack) and the state of every upstream's two
// pipes, twice a second apart: the bytes written to each and not yet
// read. A reply that waits in an upstream's stdout while the gateway's
// reader waits too is a lost wake-up in the gateway; a request unread in
// its stdin, the upstream's; both empty, a message lost on one side. It writes the record to
// SOAK_OUT (else the test's log) and returns where it went.
func (g *gateway) stuck(t *testing.T, agent, call string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: a call (%s) has run for %s\n\n", agent, call, stuckAfter)
	// Twice, a second apart: a reply still unread a second later is not
	// one the gateway is busy reading.
	for i, when := range []string{"at once", "a second later"} {
		if i > 0 {
			time.Sleep(time.Second) // the span of the record, not a synchronisation
		}
		fmt.Fprintf(&b, "the upstreams' pipes, %s:\n", when)
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", g.cmd.Process.Pid))
		for _, f := range tasks {
			raw, _ := os.ReadFile(f)
			for _, pid := range strings.Fields(string(raw)) {
				for _, fd := range []string{"0", "1"} {
					fmt.Fprintf(&b, "upstream %s fd %s: %s\n", pid, fd, unread(filepath.Join("/proc", pid, "fd", fd)))
				}
			}
		}
		b.WriteString("\n")
	}
	// Each of the gateway's descriptors with its flags, what a pipe it
	// reads holds, and for the poller's epoll descriptor what it watches
	// ("tfd": a descriptor; "data": the runtime's pollDesc, shifted left
	// 16 bits, which the stack of the goroutine waiting on it shows as
	// runtime_pollWait's first argument).
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", g.cmd.Process.Pid))
	for _, fd := range fds {
		fmt.Fprintf(&b, "gateway fd %s: %s\n", filepath.Base(fd), unread(fd))
		info, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(fd)), "fdinfo", filepath.Base(fd)))
		for _, line := range strings.Split(string(info), "\n") {
			if strings.HasPrefix(line, "flags:") || strings.HasPrefix(line, "tfd:") {
				fmt.Fprintf(&b, "    %s\n", line)
			}
		}
	}
	fmt.Fprintf(&b, "\n%s", g.goroutineProfile(2))
	for _, pid := range g.upstreams() {
		stacks, ok := upstreamStacks(pid)
		fmt.Fprintf(&b, "\nupstream %d:\n%s", pid, stacks)
		if !ok {
			// A Go process that does not answer a signal: where its
			// threads are in the kernel, then its runtime's own dump
			// (SIGQUIT, written from the signal handler, to the
			// gateway's stderr, which the upstream shares).
			fmt.Fprintf(&b, "\nupstream %d in the kernel:\n%s", pid, threads(pid))
			before := len(g.stderr.String())
			syscall.Kill(pid, syscall.SIGQUIT)
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || strings.Contains(string(st), ") Z ") {
					break // gone, its dump written
				}
			}
			fmt.Fprintf(&b, "\nupstream %d after SIGQUIT (the gateway's stderr since):\n%s\n", pid, g.stderr.String()[before:])
		}
	}
	if dir := os.Getenv("SOAK_OUT"); dir != "" {
		path := filepath.Join(dir, fmt.Sprintf("stuck-%s-%d.txt", agent, time.Now().UnixNano()))
		if os.MkdirAll(dir, 0o755) == nil && os.WriteFile(path, []byte(b.String()), 0o644) == nil {
			return path
		}
	}
	t.Logf("%s", b.String())
	return "the log"
}

// upstreamStacks is the goroutine profile of the fixture upstream pid,
// which writes it to $SOAK_OUT at a SIGUSR1 (see testdata/upstream).
func upstreamStacks(pid int) (string, bool) {
	dir := os.Getenv("SOAK_OUT")
	if dir == "" {
		return "no SOAK_OUT to write them to", true
	}
	path := filepath.Join(dir, fmt.Sprintf("stacks-%d.txt", pid))
	os.Remove(path)
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return err.Error(), true
	}
	// The upstream answers the signal on a goroutine of its own: wait
	// for the file it renames into place, a few seconds at most.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			os.Remove(path)
			return string(b), true
		}
	}
	return "no stacks within 5 s", false
}

// threads is where each thread of process pid is: its state, the kernel
// function it sleeps in, its system call and kernel stack (as root).
func threads(pid int) string {
	var b strings.Builder
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, task := range tasks {
		read := func(name string) string {
			raw, err := os.ReadFile(filepath.Join(task, name))
			if err != nil {
				return err.Error()
			}
			return strings.TrimSpace(string(raw))
		}
		stat := read("stat")
		if i := strings.LastIndexByte(stat, ')'); i >= 0 && i+3 < len(stat) {
			stat = stat[i+2 : i+3] // the state letter
		}
		fmt.Fprintf(&b, "thread %s: state %s, wchan %s, syscall %s\n%s\n", filepath.Base(task), stat, read("wchan"), read("syscall"), read("stack"))
	}
	return b.String()
}

// unread is what the pipe at path (another process's descriptor, under
// /proc) holds that was written and not yet read.
func unread(path string) string {
	link, err := os.Readlink(path)
	if err != nil {
		return err.Error()
	}
	if !strings.HasPrefix(link, "pipe:") {
		return link
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // another descriptor of the same pipe
	if err != nil {
		return link + ": " + err.Error()
	}
	defer f.Close()
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
	if err != nil {
		return link + ": " + err.Error()
	}
	if n == 0 {
		return fmt.Sprintf("%s, %d bytes unread", link, n)
	}
	return fmt.Sprintf("%s, %d bytes unread, starting %q", link, n, peek(f, 512))
}

// peek copies up to n of the bytes waiting in pipe p, leaving them there
// for its reader (tee).
func peek(p *os.File, n int) []byte {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer r.Close()
	defer w.Close()
	got, err := unix.Tee(int(p.Fd()), int(w.Fd()), n, unix.SPLICE_F_NONBLOCK)
	if err != nil || got <= 0 {
		return nil
	}
	b := make([]byte, got)
	m, _ := io.ReadFull(r, b)
	return b[:m]
}

// dump is the gateway's goroutines, grouped by stack.
func (g *gateway) dump() string { return g.goroutineProfile(1) }

// goroutineProfile is the gateway's goroutine profile at the given debug
// level: 1 groups them by stack, 2 lists each with its own.
func (g *gateway) goroutineProfile(debug int) string {
	resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/goroutine?debug=%d", g.debugURL, debug))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// sample is the gateway process's resident memory, threads and goroutines.
type sample struct {
	at                  time.Duration
	rss                 int64 // bytes
	threads, goroutines int
}

func (s sample) String() string {
	return fmt.Sprintf("RSS %.1f MiB, %d threads, %d goroutines", float64(s.rss)/(1<<20), s.threads, s.goroutines)
}

func (g *gateway) sample(t *testing.T, since time.Time) sample {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("the gateway: %v (did it die?)\n%s", err, g.stderr.String())
	}
	s := sample{at: time.Since(since)}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		switch {
		case k == "VmRSS" && len(f) > 0:
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			s.rss = kb << 10
		case k == "Threads" && len(f) > 0:
			s.threads, _ = strconv.Atoi(f[0])
		}
	}
	if s.goroutines, err = g.goroutines(); err != nil {
		t.Fatalf("goroutines: %v", err)
	}
	return s
}

// upstreams are the gateway's child processes: one fixture upstream for
// each live session.
func (g *gateway) upstreams() []int {
	var pids []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", g.cmd.Process.Pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, p := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(p); err == nil && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// soakRole: limits the run never reaches (an exhausted dimension would
// refuse every call after it), and a tool it denies.
const soakRole = `[role]
inherits = "coder"

[tools]
denied = ["ctx_forbidden"]

[limits]
max_context_tokens = 1000000000000
max_cost_usd = 1000000
max_shell_invocations = 1000000000
`

// soakPolicy is a project policy that refuses some shell commands.
const soakPolicy = `package harness.custom.soak

deny contains "no recursive deletes in a soak" if {
	input.tool == "ctx_shell"
	contains(input.arguments.command, "rm -rf")
}
`

// usage is what a session or agent spent, or what a client was charged.
type usage struct {
	tokens, cost, shell int64
}

// ledgerUsage is what the ledger holds, by agent, as the operator reads
// it (harness sessions --json).
func ledgerUsage(t *testing.T, harnessBin, home, project string) map[string]usage {
	t.Helper()
	cmd := exec.Command(harnessBin, "sessions", "--project", project, "--json")
	cmd.Env, cmd.Dir = cleanEnv(home), home
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness sessions: %v\n%s", err, out)
	}
	var list []struct {
		Agent  string
		Budget struct{ Tokens, Shell, Cost struct{ Used int64 } }
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("harness sessions --json: %v", err)
	}
	by := map[string]usage{}
	for _, s := range list {
		u := by[s.Agent]
		u.tokens += s.Budget.Tokens.Used
		u.shell += s.Budget.Shell.Used
		u.cost += s.Budget.Cost.Used
		by[s.Agent] = u
	}
	return by
}

// call is one request of the mix.
type call struct {
	kind string
	tool string // "" for tools/list
	args map[string]any
}

// mix picks a request: reads small to large, as text and as a resource,
// shell commands (which run into the shell budget), a failing command, edits,
// a denied tool, the session tool, and listings.
func mix(r *rand.Rand, i int) call {
	switch n := r.IntN(100); {
	case n < 30:
		return call{"read", "ctx_read", map[string]any{"bytes": []int{200, 2000, 20000}[r.IntN(3)]}}
	case n < 34:
		return call{"read 200 KB", "ctx_read", map[string]any{"bytes": 200000}}
	case n < 42:
		return call{"read resource", "ctx_read", map[string]any{"bytes": 3000, "resource": true}}
	case n < 54:
		return call{"shell", "ctx_shell", map[string]any{"command": fmt.Sprint("echo ", i)}}
	case n < 57:
		return call{"shell rm -rf", "ctx_shell", map[string]any{"command": "rm -rf /tmp/x"}}
	case n < 61:
		return call{"shell fail", "ctx_shell", map[string]any{"command": "fail"}}
	case n < 71:
		return call{"edit", "ctx_edit", map[string]any{"path": fmt.Sprint("f", i), "content": "x"}}
	case n < 76:
		return call{"denied tool", "ctx_forbidden", map[string]any{}}
	case n < 88:
		return call{"session", "ctx_session", map[string]any{"action": "budget"}}
	}
	return call{"tools/list", "", nil}
}

// outcome is what became of a call, as the client sees it.
type outcome struct {
	class   string // ok, tool error, refused CODE, upstream down, not decided, not charged, ledger error, rpc error
	charged usage  // what the ledger must have taken for it
	// ambiguous: the client cannot tell from the answer whether the call
	// took its charge or its shell slot (a reply of the ledger's lost, a
	// call the upstream died during); resolved from the session's
	// counters.
	ambiguous bool
	in        int64 // the arguments' tokens
	latency   time.Duration
	detail    string
}

var (
	reasonLine = regexp.MustCompile(`(?m)^- ([a-z_]+): `)
	tk         = budget.NewTokenizer()
	prices     = pricing.Default()
)

func count(t *testing.T, s string) int64 {
	n, err := tk.Count(s)
	if err != nil {
		t.Errorf("counting tokens: %v", err)
	}
	return n
}

// judge classifies a tool call's answer and works out what it was
// charged: the o200k_base tokens of what the upstream gave that reached
// the agent (the text blocks and resource texts, not the harness's own
// notes, which start "[harness] "), and the cost of those and of the
// arguments; nothing for what the harness answered instead of the
// upstream. A shell call takes its slot when it is allowed, and gives it
// back when it never reached the upstream, which the client cannot always
// tell ("maybe").
func judge(t *testing.T, c call, res *mcp.CallToolResult, err error) outcome {
	shell := c.tool == "ctx_shell"
	args, _ := json.Marshal(c.args)
	o := outcome{in: count(t, string(args))}
	if err != nil {
		o.class, o.detail, o.ambiguous = "rpc error", err.Error(), shell
		return o
	}
	var texts []string
	var upstreamTokens int64
	for _, b := range res.Content {
		switch b := b.(type) {
		case mcp.TextContent:
			texts = append(texts, b.Text)
			if !strings.HasPrefix(b.Text, "[harness] ") {
				upstreamTokens += count(t, b.Text)
			}
		case mcp.EmbeddedResource:
			if r, ok := b.Resource.(mcp.TextResourceContents); ok {
				upstreamTokens += count(t, r.Text)
			}
		}
	}
	all := strings.Join(texts, "\n")
	charge := func() {
		cost, err := prices.Cost("", o.in, upstreamTokens)
		if err != nil {
			t.Errorf("cost: %v", err)
		}
		o.charged = usage{tokens: upstreamTokens, cost: cost}
		if shell {
			o.charged.shell = 1
		}
	}
	switch {
	case c.tool == "ctx_session" && !res.IsError:
		o.class = "ok" // the harness's own answer: not charged
	case !res.IsError:
		o.class = "ok"
		charge()
	case !strings.HasPrefix(all, "[harness] "):
		o.class = "tool error" // the upstream's own: charged like a result
		charge()
	case strings.HasPrefix(all, "[harness] denied: "):
		m := reasonLine.FindStringSubmatch(all)
		if m == nil {
			o.class, o.detail = "unexplained", all
			return o
		}
		o.class = "refused " + m[1]
	case strings.Contains(all, " is down") && strings.Contains(all, "restarting"):
		// The gateway says first whether the call had reached the
		// upstream (its arguments are then charged, and a shell call
		// keeps its slot) or not (a shell call's slot is given back);
		// the upstream's own words come after.
		o.class, o.detail = "upstream down", all
		switch {
		case strings.HasPrefix(all, "[harness] the call had reached it, and its arguments were charged: "):
			o.class += ", sent: arguments charged"
			cost, err := prices.Cost("", o.in, 0)
			if err != nil {
				t.Errorf("cost: %v", err)
			}
			o.charged.cost = cost
			if shell {
				o.charged.shell = 1
			}
		case strings.HasPrefix(all, "[harness] the call was not sent, and nothing was charged: "):
		default:
			// Its arguments' charge, or the slot's return, failed: the
			// slot is read from the counters.
			o.ambiguous = shell
		}
	case strings.HasPrefix(all, "[harness] the call was not made: the harness could not decide it ("):
		o.class, o.detail, o.ambiguous = "not decided", all, shell // a reservation whose reply was lost
	case strings.Contains(all, "was withheld: it could not be charged ("):
		o.class, o.detail, o.ambiguous = "not charged", all, true // a charge whose reply was lost
		if shell {
			o.charged.shell = 1
		}
	case c.tool == "ctx_session" && strings.HasPrefix(all, "[harness] ledger: "):
		o.class, o.detail = "ledger error", all
	default:
		o.class, o.detail = "unexplained", all
	}
	return o
}

// clientRun is what one client did.
type clientRun struct {
	agent    string
	outcomes []outcome
	charged  usage
	session  string
}

// bearer puts the client's token on every request it makes: mcp-go's
// WithHTTPHeaders leaves it off the DELETE that ends a session (which the
// gateway then refuses, 401, and the session lives on until it expires).
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// connect starts a client's session, and has its upstream started (a
// listing).
func connect(url, token string, tr *http.Transport) (*client.Client, error) {
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPBasicClient(&http.Client{Transport: bearer{token, tr}}))
	if err != nil {
		return nil, err
	}
	if err := c.Start(context.Background()); err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "soak", Version: "1"}
	if _, err := c.Initialize(ictx, req); err != nil {
		return nil, err
	}
	if _, err := c.ListTools(ictx, mcp.ListToolsRequest{}); err != nil {
		return nil, err
	}
	return c, nil
}

// load makes calls of the mix until ctx ends.
func load(ctx context.Context, t *testing.T, c *client.Client, seed uint64, stuck func(call string)) *clientRun {
	cr := &clientRun{charged: listingCharge(t, c)}
	r := rand.New(rand.NewPCG(seed, 9))
	for i := 0; ctx.Err() == nil; i++ {
		k := mix(r, i)
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		start := time.Now()
		watch := time.AfterFunc(stuckAfter, func() { stuck(fmt.Sprintf("%s, %s %v", k.kind, k.tool, k.args)) })
		var o outcome
		if k.tool == "" {
			_, err := c.ListTools(cctx, mcp.ListToolsRequest{})
			o = outcome{class: "ok", latency: time.Since(start)}
			if err != nil {
				o = outcome{class: "rpc error", detail: err.Error(), latency: o.latency}
			}
		} else {
			creq := mcp.CallToolRequest{}
			creq.Params.Name, creq.Params.Arguments = k.tool, k.args
			res, err := c.CallTool(cctx, creq)
			took := time.Since(start)
			o = judge(t, k, res, err)
			o.latency = took
		}
		cancel()
		watch.Stop()
		if o.class != "ok" && o.detail == "" {
			o.detail = k.kind
		}
		if o.ambiguous {
			resolve(t, c, cr, &o)
		}
		cr.outcomes = append(cr.outcomes, o)
		cr.charged.tokens += o.charged.tokens
		cr.charged.cost += o.charged.cost
		cr.charged.shell += o.charged.shell
	}
	return cr
}

var statusCounts = regexp.MustCompile(`tokens (\d+)/\d+ .*\| shell (\d+)/`)

// resolve works out what an ambiguous call took, from the session's
// counters (ctx_session action=budget, once the ledger answers again): the
// client's session is its own and its calls are made one at a time, so
// what the counters hold beyond what it was charged before is this call's.
func resolve(t *testing.T, c *client.Client, cr *clientRun, o *outcome) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "ctx_session", map[string]any{"action": "budget"}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := c.CallTool(ctx, req)
		cancel()
		if err == nil && !res.IsError && len(res.Content) > 0 {
			line, _ := res.Content[0].(mcp.TextContent)
			if m := statusCounts.FindStringSubmatch(line.Text); m != nil {
				tokens, _ := strconv.ParseInt(m[1], 10, 64)
				shell, _ := strconv.ParseInt(m[2], 10, 64)
				dt := tokens - cr.charged.tokens - o.charged.tokens
				ds := shell - cr.charged.shell - o.charged.shell
				if dt < 0 || ds < 0 || ds > 1 {
					t.Errorf("%s: after a call (%s) the session holds %d tokens and %d shell; before it, the client had been charged %d and %d",
						cr.agent, o.class, tokens, shell, cr.charged.tokens, cr.charged.shell)
				}
				if dt > 0 {
					cost, _ := prices.Cost("", o.in, dt)
					o.charged.tokens += dt
					o.charged.cost += cost
					o.class += ", yet charged"
				}
				if ds > 0 {
					o.charged.shell += ds
					o.class += ", slot kept"
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: the session's budget could not be read for 30 s: %v", cr.agent, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listingCharge is what the session was charged before the load: the
// tools of connect's listing, as the agent was given them (a listing
// again of the same tools costs nothing more), read from the session's
// budget.
func listingCharge(t *testing.T, c *client.Client) usage {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "ctx_session", map[string]any{"action": "budget"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Errorf("the session's budget after its listing: %v", err)
		return usage{}
	}
	line, _ := res.Content[0].(mcp.TextContent)
	m := statusCounts.FindStringSubmatch(line.Text)
	if m == nil {
		t.Errorf("the session's budget after its listing: %q", line.Text)
		return usage{}
	}
	tokens, _ := strconv.ParseInt(m[1], 10, 64)
	cost, err := prices.Cost("", 0, tokens)
	if err != nil {
		t.Errorf("cost: %v", err)
	}
	return usage{tokens: tokens, cost: cost}
}

// lockSQLite locks the ledger's file from another process for hold; it
// returns when the lock is taken, and done is closed when it is let go.
func lockSQLite(path string, hold time.Duration) (done chan struct{}, err error) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLockHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "SOAK_LOCK="+path, "SOAK_LOCK_FOR="+hold.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	locked := make(chan struct{})
	done = make(chan struct{})
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if s.Text() == "locked" {
				close(locked)
			}
		}
		cmd.Wait()
		close(done)
	}()
	select {
	case <-locked:
		return done, nil
	case <-done:
		return nil, errors.New("the lock helper ended without taking the lock")
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		return nil, errors.New("the lock helper did not take the lock")
	}
}

// loadavg is the machine's load average over the last minute.
func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func soak(t *testing.T, ledger string, chaos bool) {
	clients, d := size(t)
	harnessBin, upstreamBin := build(t)
	home := t.TempDir()
	project := filepath.Join(home, "project")
	// A user's role: a project's beyond the agent's ceiling decides
	// nothing.
	if err := os.MkdirAll(filepath.Join(home, ".lean-ctx", "roles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".lean-ctx", "roles", "soak.toml"), []byte(soakRole), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(project, ".lean-ctx", "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".lean-ctx", "policies", "soak.rego"), []byte(soakPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "[[upstream]]\nname = \"lean\"\ncommand = %q\n\n", upstreamBin)
	var red *redisServer
	if ledger == "redis" {
		red = startRedis(t)
		fmt.Fprintf(&cfg, "[ledger]\nurl = %q\n\n", red.url())
	}
	tokens := make([]string, clients)
	for i := range clients {
		tokens[i] = fmt.Sprintf("soak-token-%04d-0123456789", i)
		fmt.Fprintf(&cfg, "[[gateway.tokens]]\nagent = \"client-%02d\"\ntoken = %q\nrole = \"soak\"\n\n", i, tokens[i])
	}
	if err := os.MkdirAll(filepath.Join(home, ".lean-ctx"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".lean-ctx", "harness.toml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, harnessBin, home, project)
	idle := gw.sample(t, time.Now())

	// The clients' sessions, each with its upstream, before the load.
	conns := make([]*client.Client, clients)
	transports := make([]*http.Transport, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		transports[i] = &http.Transport{MaxIdleConnsPerHost: 4}
		wg.Go(func() { conns[i], errs[i] = connect(gw.url, tokens[i], transports[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
	}
	start := gw.sample(t, time.Now())

	// The load.
	loadBefore := loadavg()
	begun := time.Now()
	ctx, stop := context.WithTimeout(context.Background(), d)
	defer stop()
	runs := make([]*clientRun, clients)
	seed := uint64(time.Now().UnixNano())
	for i := range clients {
		wg.Go(func() {
			agent := fmt.Sprintf("client-%02d", i)
			runs[i] = load(ctx, t, conns[i], seed+uint64(i), func(call string) {
				t.Logf("%s: a call (%s) has run for %s: what the gateway and its upstreams were doing is in %s", agent, call, stuckAfter, gw.stuck(t, agent, call))
			})
			runs[i].agent = agent
		})
	}
	var samples []sample
	var faults []string
	var fmu sync.Mutex
	note := func(format string, args ...any) {
		fmu.Lock()
		faults = append(faults, fmt.Sprintf("%5.1fs  ", time.Since(begun).Seconds())+fmt.Sprintf(format, args...))
		fmu.Unlock()
	}
	var fwg sync.WaitGroup
	if chaos {
		fwg.Go(func() { inject(t, ctx, gw, red, home, d, begun, note) })
	}
	for tick := time.NewTicker(d / 10); ctx.Err() == nil; {
		select {
		case <-ctx.Done():
		case <-tick.C:
			samples = append(samples, gw.sample(t, begun))
		}
	}
	wg.Wait()
	fwg.Wait()
	end := gw.sample(t, begun)
	loadAfter := loadavg()
	for i, c := range conns {
		c.Close() // DELETE: the session ends
		transports[i].CloseIdleConnections()
	}
	var after sample
	deadline := time.Now().Add(20 * time.Second)
	for {
		after = gw.sample(t, begun)
		if after.goroutines <= idle.goroutines+maxGoroutinesLeft || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// What the ledger holds, against what each client was charged.
	held := ledgerUsage(t, harnessBin, home, project)
	var total, totalHeld usage
	classes := map[string]int{}
	var latencies []time.Duration
	unexplained := 0
	for _, cr := range runs {
		h := held[cr.agent]
		total.tokens, total.cost, total.shell = total.tokens+cr.charged.tokens, total.cost+cr.charged.cost, total.shell+cr.charged.shell
		totalHeld.tokens, totalHeld.cost, totalHeld.shell = totalHeld.tokens+h.tokens, totalHeld.cost+h.cost, totalHeld.shell+h.shell
		if h != cr.charged {
			t.Errorf("%s: the ledger holds %d tokens, %d µ$, %d shell calls; the client was charged %d tokens, %d µ$, %d shell calls",
				cr.agent, h.tokens, h.cost, h.shell, cr.charged.tokens, cr.charged.cost, cr.charged.shell)
		}
		for _, o := range cr.outcomes {
			classes[o.class]++
			latencies = append(latencies, o.latency)
			if o.class == "unexplained" || o.class == "rpc error" {
				unexplained++
				if unexplained <= 5 {
					t.Errorf("%s: an answer that does not say why: %.300s", cr.agent, o.detail)
				}
			}
		}
	}

	// The report.
	var rep strings.Builder
	name := map[bool]string{false: "soak", true: "chaos"}[chaos]
	fmt.Fprintf(&rep, "%s, %s ledger: %d clients over HTTP for %s (%d CPUs; load average %s before, %s after)\n",
		name, ledger, clients, d, runtime.NumCPU(), loadBefore, loadAfter)
	fmt.Fprintf(&rep, "  calls served     %d (%.0f/s), every one answered\n", len(latencies), float64(len(latencies))/d.Seconds())
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range classes {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		fmt.Fprintf(&rep, "    %-36s %d\n", k, classes[k])
	}
	fmt.Fprintf(&rep, "  errors that do not say why: %d\n", unexplained)
	fmt.Fprintf(&rep, "  latency          p50 %s, p99 %s, max %s\n", percentile(latencies, 0.5).Round(10*time.Microsecond),
		percentile(latencies, 0.99).Round(10*time.Microsecond), percentile(latencies, 1).Round(time.Millisecond))
	fmt.Fprintf(&rep, "  gateway idle     %s\n", idle)
	fmt.Fprintf(&rep, "  %d sessions      %s (before the load)\n", clients, start)
	for _, s := range samples {
		fmt.Fprintf(&rep, "    at %4.0fs       %s\n", s.at.Seconds(), s)
	}
	fmt.Fprintf(&rep, "  end of load      %s\n", end)
	fmt.Fprintf(&rep, "  sessions ended   %s\n", after)
	fmt.Fprintf(&rep, "  ledger           %d tokens, %d µ$, %d shell calls; the clients were charged %d tokens, %d µ$, %d shell calls\n",
		totalHeld.tokens, totalHeld.cost, totalHeld.shell, total.tokens, total.cost, total.shell)
	for _, f := range faults {
		fmt.Fprintf(&rep, "  fault %s\n", f)
	}
	t.Logf("\n%s", rep.String())
	if dir := os.Getenv("SOAK_OUT"); dir != "" {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, name+"-"+ledger+".txt"), []byte(rep.String()), 0o644)
	}

	// The bounds.
	if len(samples) > 0 && end.rss > samples[0].rss+maxRSSGrowth {
		t.Errorf("the gateway's memory grew from %s to %s over the load", samples[0], end)
	}
	if end.goroutines > start.goroutines+maxGoroutineGrowth {
		t.Errorf("the gateway's goroutines grew from %d to %d over the load", start.goroutines, end.goroutines)
	}
	if after.goroutines > idle.goroutines+maxGoroutinesLeft {
		t.Errorf("after the sessions ended the gateway runs %d goroutines; idle it ran %d:\n%s", after.goroutines, idle.goroutines, gw.dump())
	}
	if out := gw.stderr.String(); strings.Contains(out, "panic:") || strings.Contains(out, "DATA RACE") {
		t.Errorf("the gateway's stderr:\n%s", out)
	}
}

// inject is the chaos: the upstreams are killed four times, and Redis is
// killed and later shut down and started again, or the SQLite file is
// locked for 2 s by another process.
func inject(t *testing.T, ctx context.Context, gw *gateway, red *redisServer, home string, d time.Duration, begun time.Time, note func(string, ...any)) {
	wait := func(frac float64) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Until(begun.Add(time.Duration(frac * float64(d))))):
			return true
		}
	}
	killUpstreams := func() {
		pids := gw.upstreams()
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		start := time.Now()
		for time.Since(start) < 15*time.Second {
			fresh := 0
			for _, p := range gw.upstreams() {
				if !slices.Contains(pids, p) {
					fresh++
				}
			}
			if fresh >= len(pids) {
				note("killed %d upstreams (kill -9); as many were running again %s later", len(pids), time.Since(start).Round(time.Millisecond))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		note("killed %d upstreams (kill -9); not all were running again 15 s later", len(pids))
	}
	steps := []struct {
		at float64
		do func()
	}{
		{0.15, killUpstreams},
		{0.3, func() {
			if red != nil {
				start := time.Now()
				red.stop(syscall.SIGKILL)
				red.start()
				note("Redis killed (kill -9) and started again: down %s", time.Since(start).Round(time.Millisecond))
				return
			}
			start := time.Now()
			done, err := lockSQLite(budget.DefaultPath(func(string) string { return "" }, home), 2*time.Second)
			if err != nil {
				t.Errorf("locking the SQLite ledger: %v", err)
				return
			}
			<-done
			note("the SQLite ledger locked by another process (BEGIN EXCLUSIVE) for %s", time.Since(start).Round(time.Millisecond))
		}},
		{0.4, killUpstreams},
		{0.65, killUpstreams},
		{0.75, func() {
			if red != nil {
				start := time.Now()
				red.stop(syscall.SIGTERM)
				red.start()
				note("Redis shut down (SIGTERM) and started again: down %s", time.Since(start).Round(time.Millisecond))
			}
		}},
		{0.9, killUpstreams},
	}
	for _, s := range steps {
		if !wait(s.at) {
			return
		}
		s.do()
	}
}
