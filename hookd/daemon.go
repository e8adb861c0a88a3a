package hookd

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/hookclient"
	"github.com/agentharness/harness/metrics"
)

// DefaultIdle is how long a daemon waits for a call before it exits.
const DefaultIdle = 15 * time.Minute

// DefaultGrace is how long the calls in flight of a daemon that stops may
// take to finish before they are refused.
const DefaultGrace = time.Second

// Options configure a daemon.
type Options struct {
	// Socket is where it listens (see SocketPath).
	Socket string
	// Idle is how long it waits for a call before it exits (DefaultIdle).
	Idle time.Duration
	// Timeout is how long a call may take (DecideTimeout): past it, the
	// call is refused.
	Timeout time.Duration
	// Grace is how long the calls in flight may take once the daemon
	// stops (DefaultGrace): past it, they are refused.
	Grace time.Duration
	// Metrics serves the daemon's metrics, /healthz and /readyz on this
	// address (host:port, loopback unless AllowRemote; then only with a
	// [metrics] token of Env's user and TLS, TLSCert and TLSKey); "" for
	// none. Ready is when every project the daemon has loaded can decide.
	Metrics         string
	AllowRemote     bool
	TLSCert, TLSKey string
	// Env is the daemon's own environment: whose harness.toml holds the
	// [metrics] token.
	Env app.Env
	// Logf hears what the metrics listener refuses (default: nothing).
	Logf func(format string, args ...any)
	// MaxLoads is how many projects' loads the daemon keeps
	// (DefaultMaxLoads): past it, the least recently used is closed, and
	// loaded again at its next call.
	MaxLoads int
}

// DefaultMaxLoads is how many projects' loads a daemon keeps when Options
// set no other number.
const DefaultMaxLoads = 32

// Serve runs a daemon on o.Socket until ctx ends, it has been idle for
// o.Idle, or its socket is gone (its directory removed, or another daemon
// took over). One daemon serves a socket at a time: if another holds the
// socket's lock, Serve returns nil at once.
//
// Every call is answered within o.Timeout, and once the daemon stops it
// takes no new call and answers those in flight within o.Grace: a call
// not decided by then is refused (a PostToolUse is not charged) and its
// work cancelled. Serve then closes the loads, giving their calls another
// grace at most, and returns without waiting for calls that were refused.
func Serve(ctx context.Context, o Options) error {
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.Timeout <= 0 {
		o.Timeout = DecideTimeout
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if err := os.MkdirAll(filepath.Dir(o.Socket), 0o700); err != nil {
		return err
	}
	// One daemon at a time: whoever holds the lock owns the socket.
	lock, err := os.OpenFile(o.Socket+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil // another daemon is running
	}
	lock.Truncate(0)
	fmt.Fprintf(lock, "%d\n", os.Getpid()) // who serves the socket
	os.Remove(o.Socket)                    // a stale socket of a daemon that died
	l, err := net.Listen("unix", o.Socket)
	if err != nil {
		return err
	}
	os.Chmod(o.Socket, 0o600)
	defer os.Remove(o.Socket)
	d := &daemon{o: o, loads: map[string]*project{}, work: make(chan func())}
	defer d.close()
	for range workers {
		go func() {
			for f := range d.work {
				f()
			}
		}()
	}
	if o.Metrics != "" {
		srv, err := d.serveMetrics()
		if err != nil {
			l.Close()
			return err
		}
		defer srv.Close()
	}
	// stopping ends when the daemon stops taking calls, whatever the
	// reason: the calls in flight then have the grace to finish.
	stopping, stop := context.WithCancel(ctx)
	defer stop()
	calls := make(chan struct{}, 1)
	go func() {
		defer l.Close()
		idle := time.NewTimer(o.Idle)
		defer idle.Stop()
		check := time.NewTicker(time.Second)
		defer check.Stop()
		for {
			select {
			case <-stopping.Done():
				return
			case <-idle.C:
			case <-calls:
				idle.Reset(o.Idle)
				continue
			case <-check.C:
				if _, err := os.Stat(o.Socket); err == nil {
					continue
				}
			}
			stop()
			return
		}
	}()
	var serving sync.WaitGroup
	defer close(d.work) // once no call is served: none sends any more
	defer serving.Wait()
	for {
		conn, err := l.Accept()
		if err != nil {
			stop()
			return nil
		}
		select {
		case calls <- struct{}{}:
		default:
		}
		serving.Go(func() { d.serve(stopping, conn) })
	}
}

// daemon keeps the loads of the projects it has answered for.
type daemon struct {
	o       Options
	mu      sync.Mutex
	loads   map[string]*project // by project root, layers and environment
	tick    uint64              // counts lookups: project.used
	closed  atomic.Bool         // no call loads or decides any more
	work    chan func()         // to the workers (see run)
	metrics *metrics.Metrics    // nil without Options.Metrics
}

// loaded is how many projects' loads the daemon keeps.
func (d *daemon) loaded() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.loads)
}

// serveMetrics starts the metrics listener of Options.Metrics, with the
// user's [metrics] token.
func (d *daemon) serveMetrics() (*metrics.Server, error) {
	cfg, err := app.UserConfig(d.o.Env)
	if err != nil {
		return nil, err
	}
	d.metrics = metrics.New(app.Version)
	logf := d.o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	srv, err := d.metrics.Listen(metrics.ListenOptions{Addr: d.o.Metrics, AllowRemote: d.o.AllowRemote, TLSCert: d.o.TLSCert, TLSKey: d.o.TLSKey,
		Handler: metrics.HandlerOptions{Token: cfg.MetricsToken, TokenSHA256: cfg.MetricsTokenSHA256, Ready: d.ready, Logf: logf}})
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if d.o.TLSCert != "" {
		scheme = "https"
	}
	logf("metrics on %s://%s/metrics (and /healthz, /readyz)", scheme, srv.Addr())
	return srv, nil
}

// ready is nil when every project the daemon has loaded can decide (see
// app.Harness.Ready), and when it has loaded none (it loads at a call).
func (d *daemon) ready(ctx context.Context) error {
	d.mu.Lock()
	loads := slices.Collect(maps.Values(d.loads))
	d.mu.Unlock()
	for _, p := range loads {
		p.mu.Lock()
		g := p.gen
		if g != nil {
			g.inflight.Add(1) // not closed under the check
		}
		p.mu.Unlock()
		if g == nil {
			continue
		}
		err := g.ready(ctx)
		g.inflight.Done()
		if err != nil {
			return err
		}
	}
	return nil
}

// workers are the goroutines a daemon keeps for its calls' work.
const workers = 4

// run runs f on one of the daemon's workers, else, when all are busy, on a
// goroutine of its own. A decision's evaluation recurses deeply: on a new
// goroutine its stack grows, and is copied, several times on every call,
// while a worker's has grown already.
func (d *daemon) run(f func()) {
	select {
	case d.work <- f:
	default:
		go f()
	}
}

// project is the current load of one project, and the fingerprint of the
// files it was loaded from.
type project struct {
	mu          sync.Mutex
	fingerprint string
	gen         *generation
	// used is the daemon's tick at the project's last call (under the
	// daemon's mu); evicted is set, under mu, once the daemon has dropped
	// the project from its loads: a call that found it before then looks
	// it up again.
	used    uint64
	evicted bool
}

// generation is one load: its handler, and the calls still using it, so
// that a newer load closes it only when they are done.
type generation struct {
	handler  *hook.ClaudeCode
	close    func() error
	ready    func(context.Context) error
	inflight sync.WaitGroup
}

// retire closes g once its calls are done.
func (g *generation) retire() {
	go func() {
		g.inflight.Wait()
		g.close()
	}()
}

// maxRequest bounds a request: a hook payload at its bound, and room for
// the rest (the project, the environment).
const maxRequest = hookclient.MaxPayload + 1<<20

// serve answers the call on conn, within the call's timeout, and within
// the grace once stopping ends.
func (d *daemon) serve(stopping context.Context, conn net.Conn) {
	defer conn.Close()
	start := time.Now()
	conn.SetDeadline(start.Add(d.o.Timeout + time.Second)) // room to write the answer
	// A request still unread when the daemon stops has the grace to arrive.
	unread := context.AfterFunc(stopping, func() { conn.SetReadDeadline(time.Now().Add(d.o.Grace)) })
	var req Request
	// A request is bounded as the hook process bounds its payload: a
	// peer (any program of this user's) that streams without end is
	// refused, not held in memory until the deadline.
	err := json.NewDecoder(io.LimitReader(conn, maxRequest)).Decode(&req)
	unread()
	if err != nil {
		return
	}
	json.NewEncoder(conn).Encode(d.bounded(stopping, req, start))
}

// bounded answers req by the call's timeout, counted from start, and by
// the grace once stopping ends; a call not decided by then is refused,
// and its work cancelled (it stops where it can: the policy's evaluation
// does, a load may not).
func (d *daemon) bounded(stopping context.Context, req Request, start time.Time) hook.Response {
	ctx, cancel := context.WithCancel(context.WithoutCancel(stopping))
	defer cancel()
	answered := make(chan hook.Response, 1)
	d.run(func() { answered <- d.answer(ctx, req) })
	timeout := time.NewTimer(d.o.Timeout - time.Since(start))
	defer timeout.Stop()
	grace := time.NewTimer(time.Hour)
	grace.Stop()
	defer grace.Stop()
	stop := stopping.Done()
	for {
		select {
		case r := <-answered:
			return r
		case <-timeout.C:
			return Unanswered(req.Payload, fmt.Sprintf("the hook daemon did not decide the call within %v", d.o.Timeout))
		case <-stop:
			stop = nil
			grace.Reset(d.o.Grace)
		case <-grace.C:
			return Unanswered(req.Payload, "the hook daemon stopped before the call was decided")
		}
	}
}

func (d *daemon) answer(ctx context.Context, req Request) hook.Response {
	return d.answerIn(ctx, req, true)
}

// answerIn answers req with the load of its project; first, when the
// request's session is pinned to another project, it answers with that
// project's load instead.
func (d *daemon) answerIn(ctx context.Context, req Request, first bool) hook.Response {
	p := params(req)
	p.Metrics = d.metrics
	loc, err := app.Locate(p)
	if err != nil {
		return Failure(req.Payload, err)
	}
	key := strings.Join(append([]string{loc.Root}, loc.Layers...), "\x00") + "\x00" + fmt.Sprint(req.Env)
	proj := d.lookup(key)
	const stopped = "the hook daemon stopped before the call was decided"
	proj.mu.Lock()
	for proj.evicted { // dropped between the lookup and the lock
		proj.mu.Unlock()
		proj = d.lookup(key)
		proj.mu.Lock()
	}
	if d.closed.Load() {
		proj.mu.Unlock()
		return Unanswered(req.Payload, stopped)
	}
	fp := Fingerprint(loc.Sources())
	if proj.gen == nil || proj.fingerprint != fp {
		if proj.gen != nil {
			proj.gen.retire()
			proj.gen = nil
		}
		h, err := app.Load(ctx, p)
		if err != nil {
			proj.mu.Unlock()
			return Failure(req.Payload, err)
		}
		handler, err := h.Hook(ctx, nil)
		if err != nil {
			h.Close()
			proj.mu.Unlock()
			return Failure(req.Payload, err)
		}
		if d.closed.Load() { // closed while this call loaded: nobody else closes it
			h.Close()
			proj.mu.Unlock()
			return Unanswered(req.Payload, stopped)
		}
		proj.gen, proj.fingerprint = &generation{handler: handler, close: h.Close, ready: h.Ready}, fp
	}
	gen := proj.gen
	gen.inflight.Add(1)
	proj.mu.Unlock()
	defer gen.inflight.Done()
	if first {
		root, err := pinned(ctx, gen.handler, req.Payload, loc.Root)
		if err != nil {
			return Failure(req.Payload, err)
		}
		if root != loc.Root { // the session is another project's
			pin := req
			pin.Project = root
			return d.answerIn(ctx, pin, false)
		}
	}
	return gen.handler.Handle(ctx, req.Payload)
}

// lookup returns the project of key, new if the daemon has none, and
// marks it used. A new project past Options.MaxLoads evicts the least
// recently used ones that no call holds.
func (d *daemon) lookup(key string) *project {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tick++
	proj, ok := d.loads[key]
	if ok {
		proj.used = d.tick
		return proj
	}
	proj = &project{used: d.tick}
	d.loads[key] = proj
	d.evict(proj)
	return proj
}

// evict drops from d.loads (d.mu held), least recently used first, the
// projects past Options.MaxLoads that no call holds, keeping keep, and
// retires their loads: the calls still using a load finish with it. A
// project whose lock a call holds (loading, or between its lookup and its
// decision) stays; the loads kept may then exceed the bound, until a
// later lookup.
func (d *daemon) evict(keep *project) {
	limit := d.o.MaxLoads
	if limit <= 0 {
		limit = DefaultMaxLoads
	}
	if len(d.loads) <= limit {
		return
	}
	keys := slices.Collect(maps.Keys(d.loads))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(d.loads[a].used, d.loads[b].used) })
	for _, k := range keys {
		if len(d.loads) <= limit {
			return
		}
		p := d.loads[k]
		if p == keep || !p.mu.TryLock() {
			continue
		}
		p.evicted = true
		if p.gen != nil {
			p.gen.retire()
			p.gen = nil
		}
		p.mu.Unlock()
		delete(d.loads, k)
	}
}

// close closes the loads once their calls are done, waiting at most the
// grace: the calls still running then were refused and cancelled, and
// close their loads when they end (if the process lives that long).
func (d *daemon) close() {
	d.closed.Store(true)
	d.mu.Lock()
	loads := slices.Collect(maps.Values(d.loads))
	d.mu.Unlock()
	var closing sync.WaitGroup
	for _, p := range loads {
		if !p.mu.TryLock() {
			continue // a load in progress, which closes itself (see answer)
		}
		g := p.gen
		p.gen = nil
		p.mu.Unlock()
		if g != nil {
			closing.Go(func() {
				g.inflight.Wait()
				g.close()
			})
		}
	}
	closed := make(chan struct{})
	go func() {
		closing.Wait()
		close(closed)
	}()
	grace := time.NewTimer(d.o.Grace)
	defer grace.Stop()
	select {
	case <-closed:
	case <-grace.C:
	}
}

// Fingerprint summarises files and directories by content: each file's
// bytes, each directory's entries by name and content (a subdirectory by
// name; loads do not descend into them). It changes when anything a load
// reads does, whatever happens to sizes and modification times, and stays
// when a file is only touched.
func Fingerprint(paths []string) string {
	h, file := sha256.New(), sha256.New()
	buf := make([]byte, 16<<10)
	for _, p := range paths {
		entries, err := os.ReadDir(p)
		if err != nil {
			// A file (ReadDir fails on one) or nothing at all.
			fmt.Fprintf(h, "%q %s\n", p, contentSum(file, buf, p))
			continue
		}
		fmt.Fprintf(h, "%q dir %d\n", p, len(entries))
		for _, e := range entries {
			sum := "dir"
			if !e.IsDir() {
				sum = contentSum(file, buf, filepath.Join(p, e.Name()))
			}
			fmt.Fprintf(h, "%q %s\n", e.Name(), sum)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// contentSum is the hash of the file at path, with h and buf, or why it
// cannot be read ("-" when there is no such file). Only a regular file is
// read: the agent writes the project's files, and a FIFO (opened without
// waiting for a writer) or a link to a device would hold the fingerprint,
// and the project's lock, for as long as it likes; a load reads neither.
func contentSum(h hash.Hash, buf []byte, path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "-"
	}
	if err != nil {
		return fmt.Sprintf("error %q", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("error %q", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Sprintf("not a regular file %v", fi.Mode().Type())
	}
	h.Reset()
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf); err != nil {
		return fmt.Sprintf("error %q", err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Start starts a daemon in the background, detached (see
// hookclient.Start).
func Start(command ...string) error { return hookclient.Start(command...) }
