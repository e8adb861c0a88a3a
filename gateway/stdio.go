package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

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

// write writes a line.
func (l *lineWriter) write(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
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
	in, undo := pollable(in)
	defer undo()
	// The reader takes each message in hand itself, in order: a request
	// goes to a goroutine of its own, a notification or a response is
	// handled there and then. (A loop between reading and dispatching
	// was one more goroutine woken, a few microseconds, every request.)
	// open guards the dispatching: once serving ends, nothing more is
	// handled, and no request joins wg while it is waited for.
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
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
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
			g.dispatch(ctx, s, w, &wg, line)
			open.RUnlock()
		}
	}()
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

// dispatch takes one line of the client in hand: a request is answered on
// a goroutine of its own (counted in wg), anything else is handled before
// the next line is read.
func (g *Gateway) dispatch(ctx context.Context, s *session, w *lineWriter, wg *sync.WaitGroup, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if line[0] == '[' {
		w.send(errorMessage(nil, &rpcError{Code: codeInvalidRequest, Message: "JSON-RPC batches are not supported: send one message a line"}))
		return
	}
	m, err := parseMessage(line)
	if err != nil {
		code := codeInvalidRequest
		if !json.Valid(line) {
			code = codeParse
		}
		w.send(errorMessage(nil, &rpcError{Code: code, Message: "not a JSON-RPC message: " + err.Error()}))
		return
	}
	if !m.isRequest() {
		s.handle(ctx, m, w)
		return
	}
	wg.Add(1)
	reuse.Go(func() { // a goroutine whose stack the policy grew already
		defer wg.Done()
		if resp := s.handle(ctx, m, w); resp != nil {
			w.sendOwned(resp) // a response is made for this answer alone
		}
	})
}
