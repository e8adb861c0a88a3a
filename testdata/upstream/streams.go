package main

// What the fixture's streamable HTTP endpoint adds around mcp-go's handler,
// which does not do these (mcp-go v1.2.1):
//
//   - SEP-1699: an SSE response to a POST starts with a priming event (an
//     event id, a retry field and empty data); every event on it gets an id
//     and is kept, so a client whose stream ended before the response (the
//     server closed it, or the connection broke) gets the rest with a GET
//     carrying Last-Event-ID. A tool closes its call's stream with the
//     function in its context under closeStreamKey (test_reconnection).
//   - DNS rebinding protection for the Origin header: a request from a page
//     that is not on a loopback origin is refused (403). mcp-go refuses a
//     Host header that is not a loopback one, not an Origin.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// closeStreamKey is the context key of a func() that closes the SSE stream
// of the current call (over HTTP only).
type closeStreamKey struct{}

// keepAbandoned is how long a stream whose client went away is kept for a
// resume.
const keepAbandoned = 2 * time.Minute

// streams is the fixture's /mcp handler: next is mcp-go's, retry the delay
// the priming events tell clients to wait before reconnecting.
type streams struct {
	next  http.Handler
	retry time.Duration

	mu   sync.Mutex
	seq  int
	byID map[string]*stream
}

func newStreams(next http.Handler, retry time.Duration) *streams {
	return &streams{next: next, retry: retry, byID: map[string]*stream{}}
}

// stream is one POST's SSE stream, kept for resumes: event i (from 0) has
// the id "<id>-<i+1>", the priming event "<id>-0".
type stream struct {
	id, session string

	mu      sync.Mutex
	events  [][]byte // whole SSE events, without their id line
	done    bool     // the handler has finished: no more events
	changed chan struct{}
}

func (st *stream) add(ev []byte) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.events = append(st.events, ev)
	close(st.changed)
	st.changed = make(chan struct{})
	return st.id + "-" + strconv.Itoa(len(st.events))
}

func (st *stream) finish() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.done = true
	close(st.changed)
	st.changed = make(chan struct{})
}

func (s *streams) open(session string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	st := &stream{id: "s" + strconv.Itoa(s.seq), session: session, changed: make(chan struct{})}
	s.byID[st.id] = st
	return st
}

func (s *streams) forget(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, st.id)
}

// lookup finds the stream of an event id of ours, and the number of its
// events the client has.
func (s *streams) lookup(eventID string) (*stream, int, bool) {
	id, n, ok := strings.Cut(eventID, "-")
	if !ok {
		return nil, 0, false
	}
	after, err := strconv.Atoi(n)
	if err != nil || after < 0 {
		return nil, 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.byID[id]
	return st, after, st != nil
}

func (s *streams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !loopbackOrigin(origin) {
		http.Error(w, fmt.Sprintf("Forbidden: origin %q is not a loopback one", origin), http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodGet:
		if st, after, ok := s.lookup(r.Header.Get("Last-Event-ID")); ok {
			s.resume(w, r, st, after)
			return
		}
	case http.MethodPost:
		s.post(w, r)
		return
	}
	s.next.ServeHTTP(w, r)
}

// post runs mcp-go's handler on a writer of ours, in a goroutine of its own
// with a context that outlives the connection: when the stream is closed
// early, or the client goes away, this returns and the handler carries on,
// its events kept for a resume.
func (s *streams) post(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	pw := &postWriter{s: s, real: w, header: http.Header{}, session: r.Header.Get("Mcp-Session-Id"), closed: make(chan struct{})}
	ctx := context.WithValue(context.WithoutCancel(r.Context()), closeStreamKey{}, pw.closeStream)
	inner := r.Clone(ctx)
	inner.Body = io.NopCloser(bytes.NewReader(body))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer pw.finish()
		defer func() {
			if p := recover(); p != nil {
				log.Printf("fixture-upstream: panic serving a POST: %v", p)
			}
		}()
		s.next.ServeHTTP(pw, inner)
	}()
	select {
	case <-done:
	case <-pw.closed:
	case <-r.Context().Done():
		pw.detach()
	}
}

// resume sends the events of st after the first `after` ones, then the
// rest as they come, until the handler has finished.
func (s *streams) resume(w http.ResponseWriter, r *http.Request, st *stream, after int) {
	if r.Header.Get("Mcp-Session-Id") != st.session {
		http.Error(w, "Unknown Last-Event-ID", http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush(w)
	for {
		st.mu.Lock()
		if after > len(st.events) {
			after = len(st.events)
		}
		events, done, changed := st.events[after:], st.done, st.changed
		st.mu.Unlock()
		for _, ev := range events {
			after++
			if _, err := fmt.Fprintf(w, "id: %s-%d\n%s", st.id, after, ev); err != nil {
				return
			}
		}
		flush(w)
		if done {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// postWriter is the response writer mcp-go's handler writes a POST's answer
// to. A JSON answer passes through. An SSE answer gets a priming event, and
// ids on its events, which are kept. Once detached (the stream closed by the
// server, or the client gone), nothing more reaches the connection: SSE
// events, and a JSON answer written after an early close, are only kept.
type postWriter struct {
	s       *streams
	real    http.ResponseWriter
	header  http.Header
	session string
	closed  chan struct{} // closed on detach

	mu          sync.Mutex
	wroteHeader bool
	started     bool    // the real response has begun
	st          *stream // the SSE stream, if the answer is one
	asJSON      bool    // st was started by an early close and the answer is JSON
	pending     []byte  // SSE bytes short of a whole event, or the JSON answer
	detached    bool
}

func (pw *postWriter) Header() http.Header { return pw.header }

func (pw *postWriter) WriteHeader(code int) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.writeHeader(code)
}

func (pw *postWriter) writeHeader(code int) {
	if pw.wroteHeader {
		return
	}
	pw.wroteHeader = true
	sse := strings.HasPrefix(pw.header.Get("Content-Type"), "text/event-stream")
	switch {
	case pw.st != nil: // the stream was started by an early close
		pw.asJSON = !sse
	case pw.detached:
	case sse && code == http.StatusOK:
		pw.startStream(code, true)
	default:
		for k, v := range pw.header {
			pw.real.Header()[k] = v
		}
		pw.real.WriteHeader(code)
		pw.started = true
	}
}

// startStream begins the real response as an SSE stream with its priming
// event; with mcp-go's headers when mcp-go began it (from its goroutine: the
// header map is mcp-go's to write until then).
func (pw *postWriter) startStream(code int, withHeaders bool) {
	pw.st = pw.s.open(pw.session)
	h := pw.real.Header()
	if withHeaders {
		for k, v := range pw.header {
			h[k] = v
		}
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	pw.real.WriteHeader(code)
	pw.started = true
	fmt.Fprintf(pw.real, "id: %s-0\nretry: %d\ndata: \n\n", pw.st.id, pw.s.retry.Milliseconds())
	flush(pw.real)
}

func (pw *postWriter) Write(p []byte) (int, error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.writeHeader(http.StatusOK)
	switch {
	case pw.st != nil:
		pw.pending = append(pw.pending, p...)
		if !pw.asJSON {
			pw.sendEvents()
		}
	case !pw.detached:
		return pw.real.Write(p)
	}
	return len(p), nil
}

// sendEvents keeps the whole events in pending and sends them with their ids.
func (pw *postWriter) sendEvents() {
	for {
		end := bytes.Index(pw.pending, []byte("\n\n"))
		if end < 0 {
			return
		}
		ev := bytes.Clone(pw.pending[:end+2])
		pw.pending = pw.pending[end+2:]
		id := pw.st.add(ev)
		if !pw.detached {
			fmt.Fprintf(pw.real, "id: %s\n%s", id, ev)
		}
	}
}

func (pw *postWriter) Flush() {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.started && !pw.detached {
		flush(pw.real)
	}
}

// closeStream ends the real response, as an SSE stream with its priming
// event if nothing was written yet, so the client resumes it for the answer.
func (pw *postWriter) closeStream() {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.detached || (pw.started && pw.st == nil) { // gone, or a JSON answer already on its way
		return
	}
	if !pw.started {
		pw.startStream(http.StatusOK, false)
	}
	pw.detachLocked()
}

func (pw *postWriter) detach() {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.detachLocked()
}

func (pw *postWriter) detachLocked() {
	if !pw.detached {
		pw.detached = true
		close(pw.closed)
	}
}

// finish records the end of the answer: a JSON answer after an early close
// becomes the stream's last event.
func (pw *postWriter) finish() {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.st == nil {
		return
	}
	if data := bytes.TrimSpace(pw.pending); len(data) > 0 {
		if pw.asJSON {
			data = fmt.Appendf(nil, "event: message\ndata: %s\n\n", data)
		} else {
			data = append(data, "\n\n"...)
		}
		pw.st.add(data)
		pw.pending = nil
	}
	pw.st.finish()
	if st := pw.st; !pw.detached {
		pw.s.forget(st) // the client has had it all
	} else {
		time.AfterFunc(keepAbandoned, func() { pw.s.forget(st) })
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// loopbackOrigin: an Origin header of a page served from this machine.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
