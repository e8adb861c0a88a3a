package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// conn is the gateway's connection to one upstream: requests with raw
// params and raw results, notifications, and what the upstream sends of
// its own (its notifications, and requests of the agent such as sampling),
// which handlers hear.
type conn interface {
	// call sends a request and waits for its response: the response
	// message (its result or JSON-RPC error), or an error when the
	// connection failed (errConnLost: the request may not have been sent).
	call(ctx context.Context, method string, params json.RawMessage) (*message, error)
	notify(ctx context.Context, method string, params json.RawMessage) error
	// done is closed when the connection is lost.
	done() <-chan struct{}
	close() error
}

// sentKey carries what to do once a request is on its way (whenSent).
type sentKey struct{}

// whenSent is ctx with f to be called once a call made with it is on its
// way to the upstream (written true), or before it is written when the
// write may wait (written false): the gateway does then what it does
// meanwhile (the decision's log entry, the allowance), on the call's
// goroutine once the request is written, which then has nothing else to
// do until the response comes, and on a goroutine of its own before. A
// conn calls f at most once; the caller makes sure the work is done in
// the end (Outcome.Wait does).
func whenSent(ctx context.Context, f func(written bool)) context.Context {
	return context.WithValue(ctx, sentKey{}, f)
}

// sent calls the function of whenSent of ctx, if any.
func sent(ctx context.Context, written bool) {
	if f, ok := ctx.Value(sentKey{}).(func(bool)); ok {
		f(written)
	}
}

// connHandlers hear what an upstream sends of its own.
type connHandlers struct {
	// notification is called in the order the upstream sent them.
	notification func(method string, params json.RawMessage)
	// request answers a request of the upstream (sampling, elicitation,
	// roots, ping).
	request func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *rpcError)
}

// errConnLost is the error of a call on a connection that is gone.
var errConnLost = errors.New("the connection to the upstream is lost")

// notSent marks a call's error when the request never left the gateway:
// the call did not happen upstream.
type notSent struct{ err error }

func (e notSent) Error() string { return e.err.Error() }
func (e notSent) Unwrap() error { return e.err }

// stdioConn runs an upstream's command and speaks JSON-RPC with it on its
// stdin and stdout, a message a line.
type stdioConn struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex
	h     connHandlers

	mu      sync.Mutex
	next    int64
	pending map[string]chan *message
	lost    chan struct{}
	closed  bool

	ctx      context.Context // of the requests the upstream makes
	cancel   context.CancelFunc
	serving  map[string]context.CancelFunc // the upstream's requests under way, by id
	incoming chan *message                 // responses and notifications, in order
	// queued counts the messages sent to incoming and not yet handed on
	// by deliver (under mu): a response read while none is hands itself
	// to its caller at once, with nothing before it left to reach the
	// agent, one goroutine hand-off fewer on the path of every result.
	queued int
	exited chan struct{}
}

// maxLine bounds one message from an upstream (a result of 64 MiB).
const maxLine = 64 << 20

func dialStdio(cfg UpstreamConfig, stderr io.Writer, h connHandlers) (*stdioConn, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its children go with it
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	widen(stdout) // a result crosses it in one write (see pipeSize)
	ctx, cancel := context.WithCancel(context.Background())
	c := &stdioConn{cmd: cmd, stdin: stdin, h: h, pending: map[string]chan *message{}, lost: make(chan struct{}),
		ctx: ctx, cancel: cancel, serving: map[string]context.CancelFunc{}, incoming: make(chan *message, 256), exited: make(chan struct{})}
	go c.read(stdout)
	go c.deliver()
	go func() {
		awaitExit(cmd) // not in waitid for the upstream's life (see awaitExit)
		cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

func (c *stdioConn) done() <-chan struct{} { return c.lost }

// read takes the upstream's messages until its stdout ends.
func (c *stdioConn) read(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	defer c.fail()
	for {
		line, err := readLine(r)
		if err != nil {
			return
		}
		if len(line) == 0 {
			continue
		}
		m, err := parseMessage(line)
		if err != nil {
			continue // not a message: some servers print banners on stdout
		}
		switch {
		case m.isResponse() || m.isNotification() && m.Method != "notifications/cancelled":
			// In the order they came: a call's log and progress messages
			// reach the agent before its result. An agent that does not
			// keep up holds up its own upstream, and nothing is lost.
			if m.isResponse() {
				if c.respond(m) {
					continue
				}
			} else {
				c.mu.Lock()
				c.queued++
				c.mu.Unlock()
			}
			select {
			case c.incoming <- m:
			case <-c.lost:
				return
			}
		case m.isNotification():
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			json.Unmarshal(m.Params, &p)
			c.mu.Lock()
			cancel := c.serving[idKey(p.RequestID)]
			c.mu.Unlock()
			if cancel != nil {
				cancel() // the upstream gave up a request it made
			}
		case m.isRequest():
			go c.answer(m)
		}
	}
}

// readLine reads one line of at most maxLine bytes, without its newline,
// into a buffer of its own. A line longer than r's buffer (a result of
// 100 KB) is gathered in a buffer that doubles as it fills: one
// allocation up to twice r's buffer, where growing it by each piece read
// took one a piece, each copying again what came before.
func readLine(r *bufio.Reader) ([]byte, error) {
	chunk, err := r.ReadSlice('\n')
	var line []byte
	if err == bufio.ErrBufferFull {
		line = make([]byte, 0, 2*len(chunk))
		for err == bufio.ErrBufferFull {
			if len(line)+len(chunk) > maxLine { // refused before the buffer grows past it
				return nil, fmt.Errorf("a message of more than %d bytes", maxLine)
			}
			if cap(line)-len(line) < len(chunk) {
				// One allocation whatever the build (slices.Grow's append
				// of a made slice allocates twice under the race detector).
				grown := make([]byte, len(line), len(line)+max(len(chunk), cap(line)))
				copy(grown, line)
				line = grown
			}
			line = append(line, chunk...)
			chunk, err = r.ReadSlice('\n')
		}
	} else if err != nil && len(chunk) == 0 {
		return nil, err
	}
	line = append(line, chunk...)
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	if len(line) > maxLine {
		return nil, fmt.Errorf("a message of more than %d bytes", maxLine)
	}
	return line, nil
}

// respond hands the response m to its caller at once when every message
// read before it was handed on (nothing is queued for deliver), and
// reports whether it did; otherwise it counts m as queued, for the
// reader to send to deliver, which hands it on after what came before.
func (c *stdioConn) respond(m *message) bool {
	c.mu.Lock()
	if c.queued > 0 {
		c.queued++
		c.mu.Unlock()
		return false
	}
	ch := c.pending[idKey(m.ID)]
	delete(c.pending, idKey(m.ID))
	c.mu.Unlock()
	if ch != nil {
		ch <- m // buffered for its one response
	}
	return true
}

// deliver hands the upstream's responses and notifications on, in their
// order.
func (c *stdioConn) deliver() {
	for {
		select {
		case m := <-c.incoming:
			if m.isResponse() {
				c.mu.Lock()
				ch := c.pending[idKey(m.ID)]
				delete(c.pending, idKey(m.ID))
				c.mu.Unlock()
				if ch != nil {
					ch <- m
				}
			} else if c.h.notification != nil {
				c.h.notification(m.Method, m.Params)
			}
			c.mu.Lock()
			c.queued--
			c.mu.Unlock()
		case <-c.lost:
			return
		}
	}
}

// answer answers a request of the upstream.
func (c *stdioConn) answer(m *message) {
	ctx, cancel := context.WithCancel(c.ctx)
	key := idKey(m.ID)
	c.mu.Lock()
	c.serving[key] = cancel
	c.mu.Unlock()
	defer func() {
		cancel()
		c.mu.Lock()
		delete(c.serving, key)
		c.mu.Unlock()
	}()
	var out []byte
	if c.h.request == nil {
		out = errorMessage(m.ID, &rpcError{Code: codeMethodNotFound, Message: "the gateway answers no requests"})
	} else if res, rerr := c.h.request(ctx, m.Method, m.Params); rerr != nil {
		out = errorMessage(m.ID, rerr)
	} else {
		out = resultMessage(m.ID, res)
	}
	c.write(out)
}

// fail ends the connection: pending calls fail, the process is stopped.
func (c *stdioConn) fail() {
	c.mu.Lock()
	select {
	case <-c.lost:
	default:
		close(c.lost)
	}
	pending := c.pending
	c.pending = map[string]chan *message{}
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	c.cancel()
}

func (c *stdioConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.stdin.Write(appendLine(make([]byte, 0, len(b)+1), b)); err != nil {
		return err
	}
	return nil
}

func (c *stdioConn) call(ctx context.Context, method string, params json.RawMessage) (*message, error) {
	ch := make(chan *message, 1)
	c.mu.Lock()
	select {
	case <-c.lost:
		c.mu.Unlock()
		return nil, notSent{errConnLost}
	default:
	}
	c.next++
	id := c.next
	key := fmt.Sprint(id)
	// With requests of others under way, the upstream may not have read
	// all that was written to it, and this write may wait: what was to
	// start once it is sent starts now, not held back by the upstream.
	waiting := len(c.pending) > 0
	c.pending[key] = ch
	c.mu.Unlock()
	if waiting {
		sent(ctx, false)
	}
	err := c.write(requestMessage(id, method, params))
	if !waiting {
		sent(ctx, true)
	}
	if err != nil {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
		return nil, notSent{fmt.Errorf("%w: %v", errConnLost, err)}
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, errConnLost
		}
		return m, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
		// Tell the upstream the request is cancelled, as a client does.
		c.notify(context.WithoutCancel(ctx), "notifications/cancelled", mustJSON(map[string]any{"requestId": id, "reason": "cancelled by the agent"}))
		return nil, ctx.Err()
	}
}

func (c *stdioConn) notify(_ context.Context, method string, params json.RawMessage) error {
	select {
	case <-c.lost:
		return errConnLost
	default:
	}
	return c.write(notificationMessage(method, params))
}

// close stops the upstream: its stdin closed, then, if it has not exited
// within a second, its process group killed.
func (c *stdioConn) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.exited
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.stdin.Close()
	select {
	case <-c.exited:
	case <-time.After(time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	}
	c.fail()
	return nil
}

// httpConn speaks streamable HTTP with an upstream, through mcp-go's
// client transport (which keeps results raw).
type httpConn struct {
	t    *transport.StreamableHTTP
	mu   sync.Mutex
	next int64
	lost chan struct{}
	once sync.Once
}

func dialHTTP(ctx context.Context, cfg UpstreamConfig, h connHandlers) (*httpConn, error) {
	t, err := transport.NewStreamableHTTP(cfg.URL, transport.WithContinuousListening())
	if err != nil {
		return nil, err
	}
	t.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		if h.notification != nil {
			params, _ := json.Marshal(n.Params)
			h.notification(n.Method, params)
		}
	})
	t.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		if h.request == nil {
			return transport.NewJSONRPCErrorResponse(req.ID, codeMethodNotFound, "the gateway answers no requests", nil), nil
		}
		params, _ := asRaw(req.Params)
		res, rerr := h.request(ctx, req.Method, params)
		if rerr != nil {
			var data any
			if len(rerr.Data) > 0 {
				data = rerr.Data
			}
			return transport.NewJSONRPCErrorResponse(req.ID, rerr.Code, rerr.Message, data), nil
		}
		return &transport.JSONRPCResponse{JSONRPC: "2.0", ID: req.ID, Result: res}, nil
	})
	if err := t.Start(ctx); err != nil {
		return nil, err
	}
	return &httpConn{t: t, lost: make(chan struct{})}, nil
}

func (c *httpConn) done() <-chan struct{} { return c.lost }

func (c *httpConn) call(ctx context.Context, method string, params json.RawMessage) (*message, error) {
	sent(ctx, false) // a request over HTTP may wait to be written (see whenSent)
	c.mu.Lock()
	c.next++
	id := c.next
	c.mu.Unlock()
	var p any
	if len(params) > 0 {
		p = params
	}
	resp, err := c.t.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(id), Method: method, Params: p})
	if err != nil {
		if ctx.Err() == nil {
			c.once.Do(func() { close(c.lost) })
		}
		// What the transport says of an answer that was no JSON-RPC
		// message (an HTTP error's status and body) quotes the upstream.
		if neverArrived(err) {
			return nil, notSent{fmt.Errorf("%w: %w", errConnLost, quotedError{err})}
		}
		return nil, fmt.Errorf("%w: %w", errConnLost, quotedError{err})
	}
	m := &message{JSONRPC: "2.0", ID: mustJSON(id), Result: resp.Result}
	if resp.Error != nil {
		m.Error = &rpcError{Code: resp.Error.Code, Message: resp.Error.Message}
		if resp.Error.Data != nil {
			m.Error.Data, _ = json.Marshal(resp.Error.Data)
		}
	}
	return m, nil
}

// neverArrived reports whether a request that failed never reached the
// upstream: it could not be connected to, or it answered that it does not
// know the session (it restarted).
func neverArrived(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, transport.ErrSessionTerminated)
}

func (c *httpConn) notify(ctx context.Context, method string, params json.RawMessage) error {
	n := mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{Method: method}}
	if len(params) > 0 {
		var fields map[string]any
		if err := json.Unmarshal(params, &fields); err == nil {
			if meta, ok := fields["_meta"].(map[string]any); ok {
				n.Params.Meta = meta
				delete(fields, "_meta")
			}
			n.Params.AdditionalFields = fields
		}
	}
	return c.t.SendNotification(ctx, n)
}

// setProtocolVersion tells the transport the version negotiated, which
// it sends as a header on every later request.
func (c *httpConn) setProtocolVersion(v string) { c.t.SetProtocolVersion(v) }

func (c *httpConn) close() error {
	c.once.Do(func() { close(c.lost) })
	return c.t.Close()
}
