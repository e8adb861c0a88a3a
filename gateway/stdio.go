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
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		wg.Wait()
		g.release(s)
	}()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		var line []byte
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
		case line = <-lines:
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] == '[' {
			w.send(errorMessage(nil, &rpcError{Code: codeInvalidRequest, Message: "JSON-RPC batches are not supported: send one message a line"}))
			continue
		}
		m, err := parseMessage(line)
		if err != nil {
			code := codeInvalidRequest
			if !json.Valid(line) {
				code = codeParse
			}
			w.send(errorMessage(nil, &rpcError{Code: code, Message: "not a JSON-RPC message: " + err.Error()}))
			continue
		}
		if !m.isRequest() {
			s.handle(ctx, m, w)
			continue
		}
		wg.Add(1)
		reuse.Go(func() { // a goroutine whose stack the policy grew already
			defer wg.Done()
			if resp := s.handle(ctx, m, w); resp != nil {
				w.sendOwned(resp) // a response is made for this answer alone
			}
		})
	}
}
