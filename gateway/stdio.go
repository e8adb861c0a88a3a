package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentharness/harness/internal/reuse"
)

// lineWriter writes messages a line each, one at a time. After a write
// fails it writes nothing more (a line may have been cut), and failed, if
// set, is told of the error once.
type lineWriter struct {
	mu     sync.Mutex
	w      io.Writer
	err    error
	failed func(error)
	// raw is w's file descriptor when w has one (a file, a pipe, a
	// socket), for writes of several buffers in one system call; looked
	// up at the first (rawLooked).
	raw       syscall.RawConn
	rawLooked bool
}

func (l *lineWriter) send(msg []byte) error {
	return l.write(appendLine(make([]byte, 0, len(msg)+1), msg))
}

// sendOwned is send of a message that the caller gives up: nothing else
// holds or reads it. Its line breaks are made spaces in place, and its end
// is appended in its spare capacity (resultMessage leaves a byte): a
// result of 100 KB is not copied again to be written.
func (l *lineWriter) sendOwned(msg []byte) error {
	spaceBreaks(msg)
	return l.write(append(msg, '\n'))
}

// sendResponse writes the response r as sendOwned writes r.message(),
// the same bytes, but where w has a file descriptor a result is written
// from where it is, between the line's head (up to its id) and its end,
// in one writev: a result of 100 KB is not copied into a message of its
// own first. A result with a line break (which only white space between
// its values can hold, made a space in a copy) is written as sendOwned
// does, and so is an error.
func (l *lineWriter) sendResponse(r *response) error {
	if r.err != nil || bytes.IndexByte(r.result, '\n') >= 0 || bytes.IndexByte(r.result, '\r') >= 0 {
		return l.sendOwned(r.message())
	}
	head := make([]byte, 0, len(r.id)+32)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, r.id...)
	head = append(head, `,"result":`...)
	spaceBreaks(head)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if !l.rawLooked {
		l.rawLooked = true
		if c, ok := l.w.(syscall.Conn); ok {
			l.raw, _ = c.SyscallConn()
		}
	}
	bufs := [][]byte{head, r.result, []byte("}\n")}
	if l.raw == nil {
		return l.writeLocked(slices.Concat(bufs...))
	}
	if rest, err := writev(l.raw, bufs); err != nil {
		// What is left is written as any line is, which fails as it
		// would have (writing to a closed standard output, os.File
		// raises SIGPIPE), and reports the error as it does.
		return l.writeLocked(slices.Concat(rest...))
	}
	return nil
}

// writev writes bufs to the file descriptor of c, in as few writev
// system calls as it takes, waiting (through the runtime's poller) for a
// descriptor in non-blocking mode to take more. On an error it returns
// what it did not write.
func writev(c syscall.RawConn, bufs [][]byte) ([][]byte, error) {
	var werr error
	err := c.Write(func(fd uintptr) bool {
		for len(bufs) > 0 {
			n, err := unix.Writev(int(fd), bufs)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false // wait until it can be written
			case err != nil:
				werr = err
				return true
			case n <= 0:
				werr = io.ErrShortWrite
				return true
			}
			for len(bufs) > 0 && len(bufs[0]) <= n {
				n -= len(bufs[0])
				bufs = bufs[1:]
			}
			if len(bufs) > 0 {
				bufs[0] = bufs[0][n:]
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return bufs, err
}

// write writes a line.
func (l *lineWriter) write(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeLocked(line)
}

// writeLocked is write, l.mu held.
func (l *lineWriter) writeLocked(line []byte) error {
	if l.err != nil {
		return l.err
	}
	if _, l.err = l.w.Write(line); l.err != nil && l.failed != nil {
		l.failed(l.err)
	}
	return l.err
}

// ServeStdio serves one agent over in and out (MCP's stdio transport: a
// message a line) as id, until in ends or ctx is done. Requests are
// answered concurrently, each as it is done; notifications are taken in
// order. The session's upstreams stop when it ends. A pipe or socket in
// blocking mode (a process's stdin) is read through the runtime's poller
// while it serves (see pollable). When an answer cannot be written to out,
// no later one can reach the client either: serving ends with that error
// (said in the log), rather than going on to run calls whose answers are
// lost; the calls under way end as a cancelled call does, charged for
// what they used.
func (g *Gateway) ServeStdio(ctx context.Context, id Identity, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &lineWriter{w: out, failed: func(err error) {
		err = fmt.Errorf("writing to the client: %w", err)
		g.o.Logf("agent %q, session %q: %v; the session ends, as no answer can reach the client", id.Agent, id.Session, err)
		cancel(err)
	}}
	s, err := g.session(id, w)
	if err != nil {
		cancel(nil)
		return err
	}
	widen(in) // results, and large arguments, cross them in one write (see pipeSize)
	widen(out)
	in, undo := pollable(in)
	defer undo()
	// The reader takes each message in hand itself, in order: a
	// notification or a response is handled there and then; a request
	// the reader answers itself, once it has handed the reading on to
	// another goroutine (one reader at a time). The request goes on at
	// once, on the goroutine that read it; the next reader starts
	// meanwhile. (A loop between reading and dispatching, then a
	// goroutine for each request, was two goroutines woken a request,
	// each a few microseconds before the request went on.) open guards
	// the dispatching: once serving ends, nothing more is handled, and no
	// request joins wg while it is waited for.
	var (
		wg   sync.WaitGroup
		open sync.RWMutex
		shut bool
	)
	defer func() {
		cancel(nil)
		open.Lock() // a message being dispatched is done with
		shut = true
		open.Unlock()
		wg.Wait()
		g.release(s)
	}()
	readErr := make(chan error, 1)
	r := bufio.NewReaderSize(in, 64<<10)
	var read func()
	read = func() {
		for {
			line, err := readLine(r)
			if err != nil {
				readErr <- err
				return
			}
			open.RLock()
			if shut || ctx.Err() != nil {
				open.RUnlock()
				return
			}
			m := g.dispatch(ctx, s, w, line)
			if m == nil {
				open.RUnlock()
				continue
			}
			wg.Add(1)
			open.RUnlock()
			reuse.Go(read) // a goroutine whose stack the policy grew already reads on
			defer wg.Done()
			if resp := s.respond(ctx, m, w); resp != nil {
				w.sendResponse(resp)
			}
			return
		}
	}
	reuse.Go(read)
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case err := <-readErr:
		if errors.Is(err, io.EOF) {
			s.hangUp() // it answers no request of an upstream's any more
			wg.Wait()  // the client is done sending: its requests are answered, then the session ends
			return nil
		}
		return err
	}
}

// dispatch takes one line of the client in hand: anything but a request
// is handled before the next line is read; a request is returned, for
// the caller to answer.
func (g *Gateway) dispatch(ctx context.Context, s *session, w *lineWriter, line []byte) *message {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '[' {
		w.send(errorMessage(nil, &rpcError{Code: codeInvalidRequest, Message: "JSON-RPC batches are not supported: send one message a line"}))
		return nil
	}
	m, err := parseMessage(line)
	if err != nil {
		code := codeInvalidRequest
		if !json.Valid(line) {
			code = codeParse
		}
		w.send(errorMessage(nil, &rpcError{Code: code, Message: "not a JSON-RPC message: " + err.Error()}))
		return nil
	}
	if !m.isRequest() {
		s.handle(ctx, m, w)
		return nil
	}
	return m
}
