package alerts

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentharness/harness/events"
)

// counts is an Observer that tallies, and says on a channel each time.
type counts struct {
	mu                          sync.Mutex
	delivered, failed           int
	dropped                     map[string]int
	deliveredCh, failedCh, drop chan struct{}
}

func newCounts() *counts {
	return &counts{dropped: map[string]int{}, deliveredCh: make(chan struct{}, 10000), failedCh: make(chan struct{}, 10000),
		drop: make(chan struct{}, 10000)}
}

func (c *counts) AlertDelivered(string) {
	c.mu.Lock()
	c.delivered++
	c.mu.Unlock()
	c.deliveredCh <- struct{}{}
}

func (c *counts) AlertFailed(string) {
	c.mu.Lock()
	c.failed++
	c.mu.Unlock()
	c.failedCh <- struct{}{}
}

func (c *counts) AlertDropped(_, reason string, n int) {
	c.mu.Lock()
	c.dropped[reason] += n
	c.mu.Unlock()
	c.drop <- struct{}{}
}

func (c *counts) get() (int, int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := map[string]int{}
	for k, v := range c.dropped {
		d[k] = v
	}
	return c.delivered, c.failed, d
}

func wait(t *testing.T, ch chan struct{}, n int, what string) {
	t.Helper()
	timeout := time.After(30 * time.Second) // a hang's bound, not a synchronisation
	for range n {
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("waiting for %d %s: timed out", n, what)
		}
	}
}

// received is what a receiver got: each POST's headers and body.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a webhook: it answers each POST with the next of statuses
// (then 200), and hands the POSTs it took (2xx) to got.
func receiver(t *testing.T, statuses ...int) (*httptest.Server, chan received) {
	t.Helper()
	got := make(chan received, 10000)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		status := 200
		if len(statuses) > 0 {
			status, statuses = statuses[0], statuses[1:]
		}
		mu.Unlock()
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "3600")
		}
		w.WriteHeader(status)
		if status/100 == 2 {
			got <- received{r.Header.Clone(), body}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func event(typ events.Type, id string) events.Event {
	e := events.Event{ID: id, Type: typ, Agent: "claude-code", Session: "s1", Role: "coder"}
	switch typ {
	case events.BudgetWarning, events.BudgetExhausted:
		pct := int64(80)
		e.Budget = &events.Budget{Dimension: "tokens", Used: 800, Limit: 1000, Percent: &pct}
	case events.PolicyViolation:
		e.Violation = &events.Violation{Tool: "ctx_shell", Reason: "shell_denied: <b>no</b> & never"}
	case events.RoleChanged:
		e.Switch = &events.Switch{From: "reviewer", To: "coder", By: "operator"}
	case events.BudgetReset:
		e.Reset = &events.Reset{By: "operator", Scope: events.ScopeSession}
	case events.ApprovalRequested:
		e.Violation = &events.Violation{Tool: "ctx_shell", Reason: "ask: a push"}
	}
	return e
}

// fast are back-off settings for tests: retries at once.
func fast(o Options) Options {
	o.MinBackoff, o.MaxBackoff = time.Microsecond, time.Millisecond
	return o
}

// An alert gets the events of its types, as the events log writes them,
// with its headers; another alert gets its own in Slack's form.
func TestDelivery(t *testing.T) {
	t.Parallel()
	jsonSrv, jsonGot := receiver(t)
	slackSrv, slackGot := receiver(t)
	c := newCounts()
	s := New(fast(Options{Observer: c, Alerts: []Alert{
		{Name: "json", URL: jsonSrv.URL + "/hook", Events: []events.Type{events.BudgetExhausted, events.PolicyViolation},
			Headers: map[string]string{"Authorization": "Bearer xyz"}},
		{Name: "slack", URL: slackSrv.URL, Format: FormatSlack},
	}}))
	defer s.Close(time.Second)
	for i, typ := range events.Types {
		s.Emit(event(typ, fmt.Sprint("e", i)))
	}
	wait(t, c.deliveredCh, 2+len(events.Types), "deliveries")

	for _, want := range []events.Type{events.BudgetExhausted, events.PolicyViolation} {
		r := <-jsonGot
		var e events.Event
		if err := json.Unmarshal(r.body, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != want || e.Agent != "claude-code" || r.header.Get("X-Harness-Event") != string(want) ||
			r.header.Get("Authorization") != "Bearer xyz" || r.header.Get("Content-Type") != "application/json" || r.header.Get("X-Harness-Event-Id") != e.ID {
			t.Errorf("json alert got %s %+v, want %s", r.body, r.header, want)
		}
	}
	select {
	case r := <-jsonGot:
		t.Errorf("json alert got an event it does not send: %s", r.body)
	default:
	}
	for _, typ := range events.Types {
		r := <-slackGot
		var body map[string]string
		if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 1 {
			t.Fatalf("slack body %s: %v", r.body, err)
		}
		if !strings.HasPrefix(body["text"], "[agent-harness] "+string(typ)+": agent claude-code, session s1, role coder: ") {
			t.Errorf("slack text %q", body["text"])
		}
	}
	if d, f, dropped := c.get(); d != 2+len(events.Types) || f != 0 || len(dropped) != 0 {
		t.Errorf("delivered %d, failed %d, dropped %v", d, f, dropped)
	}
}

// The Slack text says what happened in a line, with Slack's markup
// characters as entities and control characters escaped.
func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		e    events.Event
		want string
	}{
		{event(events.BudgetWarning, "1"), "[agent-harness] BudgetWarning: agent claude-code, session s1, role coder: session budget tokens 800/1000 (80%)"},
		{event(events.PolicyViolation, "2"), "[agent-harness] PolicyViolation: agent claude-code, session s1, role coder: refused ctx_shell: shell_denied: &lt;b&gt;no&lt;/b&gt; &amp; never"},
		{event(events.RoleChanged, "3"), "[agent-harness] RoleChanged: agent claude-code, session s1, role coder: role reviewer → coder (by operator)"},
		{event(events.BudgetReset, "4"), "[agent-harness] BudgetReset: agent claude-code, session s1, role coder: the operator reset the session's usage"},
		{events.Event{Type: events.BudgetReset, Agent: "a", Reset: &events.Reset{By: "operator", Scope: events.ScopeAgent, Period: "2026-12"}},
			"[agent-harness] BudgetReset: agent a: the operator reset the agent's budget for 2026-12"},
		{event(events.ApprovalRequested, "6"), "[agent-harness] ApprovalRequested: agent claude-code, session s1, role coder: ctx_shell waits for approval: ask: a push"},
		{events.Event{Type: events.BudgetExhausted, Agent: "a\nforged line", Shadow: true, Budget: &events.Budget{Dimension: "cost", Used: 2_000_000, Limit: 1_000_000, Scope: events.ScopeAgent, Period: "day"}},
			`agent a\nforged line: agent budget (day) cost $2.00/$1.00 [shadow mode: not enforced]`},
	}
	for _, tt := range tests {
		got := Text(tt.e)
		if !strings.Contains(got, tt.want) || strings.Contains(got, "\n") {
			t.Errorf("Text(%s):\n got %s\nwant …%s…", tt.e.Type, got, tt.want)
		}
	}
	long := event(events.PolicyViolation, "5")
	long.Violation.Reason = strings.Repeat("é", 4000)
	if got := Text(long); len(got) > maxText+len("…") || !strings.HasSuffix(got, "…") || !strings.Contains(got, "é") {
		t.Errorf("a long text is %d bytes", len(got))
	}
}

// While the receiver is down (refusing connections, then answering 503),
// an alert retries with back-off and later events wait; once it is back,
// every event arrives, in order, and the failures were counted.
func TestReceiverDown(t *testing.T) {
	t.Parallel()
	// A port nothing listens on, for now.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	c := newCounts()
	var logs []string
	var logMu sync.Mutex
	s := New(fast(Options{Observer: c, Alerts: []Alert{{Name: "ops", URL: "http://" + addr + "/services/s3cr3t"}},
		Logf: func(f string, a ...any) { logMu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); logMu.Unlock() }}))
	defer s.Close(time.Second)
	for i := range 5 {
		s.Emit(event(events.BudgetWarning, fmt.Sprint("e", i)))
	}
	wait(t, c.failedCh, 3, "failed attempts while nothing listens")

	// Back, answering 503 twice before it takes events.
	got := make(chan string, 100)
	statuses := []int{503, 503}
	var mu sync.Mutex
	back, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e events.Event
		json.NewDecoder(r.Body).Decode(&e)
		mu.Lock()
		status := 200
		if len(statuses) > 0 {
			status, statuses = statuses[0], statuses[1:]
		}
		mu.Unlock()
		w.WriteHeader(status)
		if status == 200 {
			got <- e.ID
		}
	})}
	go srv.Serve(back)
	defer srv.Close()

	wait(t, c.deliveredCh, 5, "deliveries once the receiver is back")
	for i := range 5 {
		if id := <-got; id != fmt.Sprint("e", i) {
			t.Errorf("delivery %d: event %s", i, id)
		}
	}
	d, f, dropped := c.get()
	if d != 5 || f < 5 || len(dropped) != 0 { // 3+ refused connections, 2 503s
		t.Errorf("delivered %d, failed %d, dropped %v", d, f, dropped)
	}
	logMu.Lock()
	defer logMu.Unlock()
	joined := strings.Join(logs, "\n")
	if !strings.Contains(joined, "alert ops: delivering BudgetWarning failed") || !strings.Contains(joined, "delivered again") {
		t.Errorf("logs:\n%s", joined)
	}
	if strings.Contains(joined, "s3cr3t") {
		t.Errorf("a log shows the webhook's URL:\n%s", joined)
	}
}

// A full queue drops its oldest events, never blocking Emit: the receiver
// gets the first event (in flight) and the latest ones.
func TestQueueFull(t *testing.T) {
	t.Parallel()
	arrived := make(chan string, 100)
	release := make(chan struct{})
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e events.Event
		json.NewDecoder(r.Body).Decode(&e)
		// An attempt that failed on the way (seen once in CI, under
		// load) is made again with the same id, as a receiver is told
		// to expect: the test counts each event once, and holds the
		// repeat as it held the first.
		mu.Lock()
		again := seen[e.ID]
		seen[e.ID] = true
		mu.Unlock()
		if again {
			t.Logf("event %s posted again", e.ID)
		} else {
			arrived <- e.ID
		}
		<-release
	}))
	defer srv.Close()
	c := newCounts()
	s := New(fast(Options{Observer: c, Alerts: []Alert{{Name: "ops", URL: srv.URL, Queue: 3}}}))
	defer s.Close(time.Second)

	s.Emit(event(events.PolicyViolation, "first"))
	if id := <-arrived; id != "first" {
		t.Fatalf("first delivery: %s", id)
	}
	// The receiver holds the first; these wait, the queue keeps 3.
	for i := range 8 {
		s.Emit(event(events.PolicyViolation, fmt.Sprint("e", i)))
	}
	if _, _, dropped := c.get(); dropped[DropQueueFull] != 5 {
		t.Errorf("dropped %v, want 5 for room", dropped)
	}
	close(release)
	for _, want := range []string{"e5", "e6", "e7"} {
		if id := <-arrived; id != want {
			t.Errorf("got %s, want %s", id, want)
		}
	}
	wait(t, c.deliveredCh, 4, "deliveries")
}

// A receiver's refusal (4xx but 408 and 429) drops the event at once;
// 429 is retried, within MaxBackoff whatever Retry-After says; an event
// retried for RetryFor is given up.
func TestGiveUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		statuses  []int
		retryFor  time.Duration
		delivered int
		dropped   string
		minFailed int
	}{
		{"rejected", []int{400}, 0, 0, DropRejected, 1},
		{"not found", []int{404}, 0, 0, DropRejected, 1},
		{"too many requests", []int{429, 429}, 0, 1, "", 2},
		{"timeout status", []int{408}, 0, 1, "", 1},
		{"server error", []int{500, 502, 503}, 0, 1, "", 3},
		{"gave up", []int{503, 503, 503}, time.Nanosecond, 0, DropGaveUp, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := receiver(t, tt.statuses...)
			c := newCounts()
			s := New(fast(Options{Observer: c, Alerts: []Alert{{Name: "ops", URL: srv.URL, RetryFor: tt.retryFor}}}))
			s.Emit(event(events.BudgetExhausted, "x"))
			if tt.dropped != "" {
				wait(t, c.drop, 1, "a drop")
			} else {
				wait(t, c.deliveredCh, 1, "a delivery")
			}
			s.Close(time.Second)
			d, f, dropped := c.get()
			if d != tt.delivered || f < tt.minFailed || (tt.dropped != "" && dropped[tt.dropped] != 1) {
				t.Errorf("delivered %d, failed %d, dropped %v", d, f, dropped)
			}
		})
	}
}

// Close waits for the queued events; what it cannot deliver within its
// wait is dropped as shutdown, and events after Close are not sent.
func TestClose(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so that the server sees the client go
		arrived <- struct{}{}
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	c := newCounts()
	s := New(fast(Options{Observer: c, Alerts: []Alert{{Name: "ops", URL: srv.URL}}}))
	for i := range 3 {
		s.Emit(event(events.BudgetReset, fmt.Sprint(i)))
	}
	<-arrived
	s.Close(0)
	s.Emit(event(events.BudgetReset, "late"))
	s.Close(time.Second) // a second Close returns
	if d, _, dropped := c.get(); d != 0 || dropped[DropShutdown] != 3 {
		t.Errorf("delivered %d, dropped %v, want 3 at shutdown", d, dropped)
	}

	// Delivered within the wait: nothing dropped.
	ok, got := receiver(t)
	c = newCounts()
	s = New(fast(Options{Observer: c, Alerts: []Alert{{Name: "ops", URL: ok.URL}}}))
	for i := range 3 {
		s.Emit(event(events.BudgetReset, fmt.Sprint(i)))
	}
	s.Close(30 * time.Second)
	if d, _, dropped := c.get(); d != 3 || len(dropped) != 0 || len(got) != 3 {
		t.Errorf("delivered %d (received %d), dropped %v", d, len(got), dropped)
	}
}
