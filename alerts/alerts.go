// Package alerts sends chosen harness events to webhooks: each event as a
// JSON POST (the event as the events log writes it), or in Slack's
// incoming-webhook form ({"text": "..."}), retried with back-off while the
// receiver is down.
//
// A [Sender] is an events.Sink whose Emit never blocks and never waits for
// a network: it puts the event on each matching alert's queue and
// returns. Each alert has a worker of its own, so one receiver that is
// down holds up no other. A queue is bounded: when it is full, the oldest
// queued event makes room for the new one (the receiver gets the latest
// events once it is back), and the drop is counted. Failures are counted
// through an [Observer] (the metrics) and logged, without the webhook's
// URL, which is a secret for some receivers (Slack's is).
package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

// Formats of an alert's body.
const (
	// FormatJSON posts the event itself, as the events log writes it.
	FormatJSON = "json"
	// FormatSlack posts {"text": "..."}: one readable line, as Slack's
	// incoming webhooks (and Mattermost's, Discord's /slack, …) take it.
	FormatSlack = "slack"
)

// Events are the event types an alert may send: every harness event.
var Events = events.Types

// Defaults of an Alert.
const (
	DefaultQueue    = 1000
	DefaultTimeout  = 5 * time.Second
	DefaultRetryFor = 10 * time.Minute
)

// Back-off between attempts to deliver one event: from MinBackoff,
// doubling up to MaxBackoff (a receiver's Retry-After, within that bound,
// if it asks for longer).
const (
	MinBackoff = 500 * time.Millisecond
	MaxBackoff = 30 * time.Second
)

// Alert is one webhook and the events it gets ([[alerts]] in harness.toml).
type Alert struct {
	// Name names the alert in logs and metrics (never the URL).
	Name string
	// URL receives the POSTs.
	URL string
	// Events are the types sent; empty: all of Events.
	Events []events.Type
	// Format is FormatJSON (default) or FormatSlack.
	Format string
	// Headers are added to each POST (an Authorization, say).
	Headers map[string]string
	// Queue bounds the events waiting (DefaultQueue).
	Queue int
	// Timeout bounds one POST (DefaultTimeout).
	Timeout time.Duration
	// RetryFor is how long one event is retried before it is given up
	// (DefaultRetryFor).
	RetryFor time.Duration
}

// Observer hears what becomes of alerts (the metrics). Its methods must
// return at once; AlertDropped may be called from Emit.
type Observer interface {
	// AlertDelivered is an event the receiver took (a 2xx answer).
	AlertDelivered(alert string)
	// AlertFailed is one failed attempt: no answer, or an error status.
	AlertFailed(alert string)
	// AlertDropped is n events given up, and why: queue_full, gave_up,
	// rejected, shutdown.
	AlertDropped(alert, reason string, n int)
}

// Why events are dropped (AlertDropped's reasons).
const (
	DropQueueFull = "queue_full"
	DropGaveUp    = "gave_up"
	DropRejected  = "rejected"
	DropShutdown  = "shutdown"
)

// Options are a Sender's.
type Options struct {
	Alerts []Alert
	// Observer hears of deliveries and failures; nil: nobody.
	Observer Observer
	// Logf hears of failures (default: nothing).
	Logf func(format string, args ...any)
	// Client makes the POSTs (default: a client of its own).
	Client *http.Client
	// MinBackoff and MaxBackoff bound the back-off (the package's
	// defaults when 0).
	MinBackoff, MaxBackoff time.Duration
	// UserAgent is the POSTs' User-Agent (default "agent-harness").
	UserAgent string
}

// Sender delivers events to the alerts' webhooks. It is safe for
// concurrent use.
type Sender struct {
	workers []*worker
	once    sync.Once
}

// New starts a worker for each alert.
func New(o Options) *Sender {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Observer == nil {
		o.Observer = nobody{}
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = MinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = MaxBackoff
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.UserAgent == "" {
		o.UserAgent = "agent-harness"
	}
	s := &Sender{}
	for i, a := range o.Alerts {
		if a.Name == "" {
			a.Name = fmt.Sprintf("alerts.%d", i+1)
		}
		if a.Format == "" {
			a.Format = FormatJSON
		}
		if a.Queue <= 0 {
			a.Queue = DefaultQueue
		}
		if a.Timeout <= 0 {
			a.Timeout = DefaultTimeout
		}
		if a.RetryFor <= 0 {
			a.RetryFor = DefaultRetryFor
		}
		if len(a.Events) == 0 {
			a.Events = Events
		}
		ctx, cancel := context.WithCancel(context.Background())
		w := &worker{a: a, o: &o, wake: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{}),
			ctx: ctx, cancel: cancel}
		s.workers = append(s.workers, w)
		go w.run()
	}
	return s
}

// Emit queues e for every alert that sends its type. It never blocks: a
// full queue drops its oldest event. An event emitted after Close is not
// sent.
func (s *Sender) Emit(e events.Event) error {
	for _, w := range s.workers {
		if slices.Contains(w.a.Events, e.Type) {
			w.push(e)
		}
	}
	return nil
}

// Close stops taking events and waits up to wait for the queued ones to be
// delivered (their retries included); what is still undelivered then is
// dropped (counted, and logged). A second Close returns at once.
func (s *Sender) Close(wait time.Duration) {
	s.once.Do(func() {
		for _, w := range s.workers {
			w.mu.Lock()
			w.closed = true
			w.mu.Unlock()
			close(w.closing)
		}
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for _, w := range s.workers {
			select {
			case <-w.done:
			case <-timer.C:
				for _, w := range s.workers {
					w.cancel()
				}
				<-w.done
			}
		}
		for _, w := range s.workers {
			w.cancel()
			<-w.done
		}
	})
}

// worker delivers one alert's events, in order, one at a time.
type worker struct {
	a Alert
	o *Options

	mu         sync.Mutex
	ring       []events.Event // the queue, a ring of a.Queue events once used
	head, n    int
	closed     bool
	overflowed int // events dropped for room since the worker last said so

	wake    chan struct{}
	closing chan struct{}
	done    chan struct{}
	ctx     context.Context // cancelled when Close gives up waiting
	cancel  context.CancelFunc

	failures int // failed attempts in a row
}

// push queues e, dropping the oldest queued event if the queue is full.
func (w *worker) push(e events.Event) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	if w.ring == nil {
		w.ring = make([]events.Event, w.a.Queue)
	}
	dropped := false
	if w.n == len(w.ring) {
		w.ring[w.head] = events.Event{}
		w.head = (w.head + 1) % len(w.ring)
		w.n--
		w.overflowed++
		dropped = true
	}
	w.ring[(w.head+w.n)%len(w.ring)] = e
	w.n++
	w.mu.Unlock()
	if dropped {
		w.o.Observer.AlertDropped(w.a.Name, DropQueueFull, 1)
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pop takes the oldest queued event, if there is one, and how many the
// queue overflowed by since the last pop that said so.
func (w *worker) pop() (events.Event, bool, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	over := w.overflowed
	w.overflowed = 0
	if w.n == 0 {
		return events.Event{}, false, over
	}
	e := w.ring[w.head]
	w.ring[w.head] = events.Event{}
	w.head = (w.head + 1) % len(w.ring)
	w.n--
	return e, true, over
}

func (w *worker) run() {
	defer close(w.done)
	for {
		e, ok, over := w.pop()
		if over > 0 {
			w.o.Logf("alert %s: the queue was full (%d events): dropped the %d oldest", w.a.Name, w.a.Queue, over)
		}
		if ok {
			if !w.deliver(e) { // shut down: what is left is dropped
				w.shutdown(1)
				return
			}
			continue
		}
		select {
		case <-w.wake:
		case <-w.closing:
			if w.queued() == 0 {
				return
			}
		case <-w.ctx.Done():
			w.shutdown(0)
			return
		}
	}
}

// queued is how many events wait.
func (w *worker) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// shutdown drops what is queued, and inflight more, when Close stopped
// waiting.
func (w *worker) shutdown(inflight int) {
	w.mu.Lock()
	n := w.n + inflight
	w.ring, w.head, w.n = nil, 0, 0
	w.mu.Unlock()
	if n > 0 {
		w.o.Observer.AlertDropped(w.a.Name, DropShutdown, n)
		w.o.Logf("alert %s: %d events undelivered when the harness stopped", w.a.Name, n)
	}
}

// deliver posts e until the receiver takes it, refuses it, or RetryFor
// passes; it is false when Close stopped waiting first.
func (w *worker) deliver(e events.Event) bool {
	body, err := w.body(e)
	if err != nil {
		w.o.Observer.AlertDropped(w.a.Name, DropRejected, 1)
		w.o.Logf("alert %s: event %s could not be encoded: %v", w.a.Name, e.Type, err)
		return true
	}
	start := time.Now()
	backoff := w.o.MinBackoff
	for {
		status, retryAfter, err := w.post(e, body)
		if err == nil && status/100 == 2 {
			w.o.Observer.AlertDelivered(w.a.Name)
			if w.failures > 0 {
				w.o.Logf("alert %s: delivered again, after %d failed attempts", w.a.Name, w.failures)
				w.failures = 0
			}
			return true
		}
		if w.ctx.Err() != nil {
			return false
		}
		w.o.Observer.AlertFailed(w.a.Name)
		why := fmt.Sprintf("status %d", status)
		if err != nil {
			why = err.Error()
		}
		if w.failures++; w.failures == 1 {
			w.o.Logf("alert %s: delivering %s failed (%s); retrying with back-off, later events wait", w.a.Name, e.Type, why)
		}
		if err == nil && status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests {
			w.o.Observer.AlertDropped(w.a.Name, DropRejected, 1)
			w.o.Logf("alert %s: the receiver refused %s (%s): dropped", w.a.Name, e.Type, why)
			return true
		}
		wait := backoff
		if retryAfter > wait {
			wait = min(retryAfter, w.o.MaxBackoff)
		}
		if time.Since(start)+wait > w.a.RetryFor {
			w.o.Observer.AlertDropped(w.a.Name, DropGaveUp, 1)
			w.o.Logf("alert %s: gave up %s after %v of retries (%s)", w.a.Name, e.Type, time.Since(start).Round(time.Second), why)
			return true
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-w.ctx.Done():
			timer.Stop()
			return false
		}
		backoff = min(backoff*2, w.o.MaxBackoff)
	}
}

// post makes one attempt: the answer's status and the Retry-After it
// asked for, or why there was none. Its error never holds the URL.
func (w *worker) post(e events.Event, body []byte) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(w.ctx, w.a.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.a.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, fmt.Errorf("bad request: %s", redact(err, w.a.URL))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.o.UserAgent)
	req.Header.Set("X-Harness-Event", string(e.Type))
	if e.ID != "" {
		req.Header.Set("X-Harness-Event-Id", e.ID) // retries may repeat an event: the receiver can tell
	}
	for k, v := range w.a.Headers {
		req.Header.Set(k, v)
	}
	resp, err := w.o.Client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("%s", redact(err, w.a.URL))
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	var after time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		after = time.Duration(s) * time.Second
	}
	return resp.StatusCode, after, nil
}

// redact is err's text without the URL (Go's client errors quote it).
func redact(err error, url string) string {
	s := err.Error()
	if url != "" {
		s = strings.ReplaceAll(s, url, "(webhook)")
		s = strings.ReplaceAll(s, strconv.Quote(url), "(webhook)")
	}
	return s
}

// body is what an alert posts for e.
func (w *worker) body(e events.Event) ([]byte, error) {
	if w.a.Format == FormatSlack {
		return json.Marshal(map[string]string{"text": Text(e)})
	}
	return events.Marshal(e)
}

// maxText bounds a Slack text (Slack shows about 4,000 characters).
const maxText = 3000

// Text is e as one line for a person (the Slack form): what happened, to
// which agent and session, with control characters escaped, Slack's
// markup characters (&, <, >) as its entities, and mentions and links
// broken (see slackText).
func Text(e events.Event) string {
	p := contract.Printable
	who := "agent " + p(e.Agent)
	if e.Session != "" {
		who += ", session " + p(e.Session)
	}
	if e.Role != "" {
		who += ", role " + p(e.Role)
	}
	var what string
	switch {
	case e.Budget != nil:
		scope := "session budget"
		if e.Scope == events.ScopeAgent {
			scope = "agent budget (" + p(e.Period) + ")"
		}
		what = fmt.Sprintf("%s %s %s/%s", scope, p(e.Dimension), amount(e.Dimension, e.Used), amount(e.Dimension, e.Limit))
		if e.Percent != nil {
			what += fmt.Sprintf(" (%d%%)", *e.Percent)
		}
	case e.Violation != nil && e.Type == events.ApprovalRequested:
		what = fmt.Sprintf("%s waits for approval: %s", p(e.Tool), p(e.Reason))
	case e.Violation != nil:
		what = fmt.Sprintf("refused %s: %s", p(e.Tool), p(e.Reason))
	case e.Switch != nil:
		what = fmt.Sprintf("role %s → %s", p(e.From), p(e.To))
		if e.By != "" {
			what += " (by " + p(e.By) + ")"
		}
	case e.Reset != nil && e.Reset.Scope == events.ScopeAgent:
		what = fmt.Sprintf("the %s reset the agent's budget for %s", p(e.Reset.By), p(e.Reset.Period))
	case e.Reset != nil:
		what = fmt.Sprintf("the %s reset the session's usage", p(e.Reset.By))
	}
	if e.Shadow {
		what += " [shadow mode: not enforced]"
	}
	text := fmt.Sprintf("[agent-harness] %s: %s: %s", p(string(e.Type)), who, what)
	if len(text) > maxText {
		cut := maxText
		for cut > 0 && text[cut]&0xc0 == 0x80 {
			cut--
		}
		text = text[:cut] + "…"
	}
	return slackText.Replace(text)
}

// slackText writes Slack's markup characters as its entities, and breaks
// with a zero-width space what Mattermost and Discord (which take the
// Slack form) read as a mention of everyone (@channel, @everyone, …: an
// @ before a word) or a link that shows other text ([text](url)): the
// agent names its tools.
var slackText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "@", "@\u200b", "](", "]\u200b(")

func amount(dim string, n int64) string {
	if dim == "cost" {
		return contract.FormatUSD(n)
	}
	return strconv.FormatInt(n, 10)
}

type nobody struct{}

func (nobody) AlertDelivered(string)            {}
func (nobody) AlertFailed(string)               {}
func (nobody) AlertDropped(string, string, int) {}
