package policy

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/agentharness/harness/policy/plan"
)

// Every evaluation is bounded, in time and in memory, so that a policy
// (a project's, which an agent can write) can neither stall a call until
// the agent's client gives up and lets the tool run, nor take the harness
// down: past either bound the evaluation is stopped and the call denied
// with evaluation_error, naming the bound.

// Bounds limit one evaluation.
type Bounds struct {
	// Timeout is the longest an evaluation may take ([policy] timeout).
	Timeout time.Duration
	// Memory is how much the heap may grow while an evaluation runs.
	Memory uint64
}

// Default bounds.
const (
	DefaultTimeout = time.Second
	DefaultMemory  = 512 << 20
)

// memoryWatchAfter is when an evaluation's heap starts being watched (few
// last that long), and memoryWatchEvery how often it is looked at then.
const (
	memoryWatchAfter = 10 * time.Millisecond
	memoryWatchEvery = 2 * time.Millisecond
)

// boundsOf keeps the bounds in force.
type boundsOf struct{ timeout, memory atomic.Int64 }

func (b *boundsOf) get() Bounds {
	t, m := time.Duration(b.timeout.Load()), uint64(b.memory.Load())
	if t <= 0 {
		t = DefaultTimeout
	}
	if m == 0 {
		m = DefaultMemory
	}
	return Bounds{Timeout: t, Memory: m}
}

// SetBounds puts new bounds on the evaluations that start from now on (zero
// fields: the defaults).
func (e *Engine) SetBounds(b Bounds) {
	e.bounds.timeout.Store(int64(b.Timeout))
	e.bounds.memory.Store(int64(b.Memory))
}

// Bounds are the bounds in force.
func (e *Engine) Bounds() Bounds { return e.bounds.get() }

// errBound is why a bounded evaluation was stopped.
type errBound struct{ msg string }

func (e *errBound) Error() string { return e.msg }

// viewTimeout bounds the evaluations that run none of the custom policies'
// rules (a session's status, the levels of usages, a listing), which tell
// budget crossings and what the status line says: a busy machine must not
// lose an event to a deadline meant for slow policies. Ten times the
// deadline, and 10 s at least.
func viewTimeout(b Bounds) time.Duration { return max(10*b.Timeout, 10*time.Second) }

// bounded puts the engine's bounds on an evaluation under ctx: a deadline,
// and a watch of the heap from memoryWatchAfter on.
func (e *Engine) bounded(ctx context.Context) *bound {
	return e.boundedBy(ctx, e.bounds.get())
}

// boundedView is bounded for an evaluation of none of the custom
// policies' rules: the memory bound, and the longer deadline of views.
func (e *Engine) boundedView(ctx context.Context) *bound {
	b := e.bounds.get()
	b.Timeout = viewTimeout(b)
	return e.boundedBy(ctx, b)
}

func (e *Engine) boundedBy(ctx context.Context, b Bounds) *bound {
	// One timer watches both bounds, and it fires only for evaluations
	// that last (few do); the end of ctx is watched only when ctx can end.
	// A plan's evaluation watches the bound's flag and Cancel (plan.Options)
	// rather than a context of the bound's own: a decision pays for one
	// timer, not for a context, a timer and a watch of that context.
	bd := &bound{parent: ctx, cancel: topdown.NewCancel(), deadline: time.Now().Add(b.Timeout), timeout: b.Timeout}
	bd.watch = time.AfterFunc(min(memoryWatchAfter, b.Timeout), func() { bd.watchBounds(b) })
	if ctx.Done() != nil {
		bd.unwatchParent = context.AfterFunc(ctx, func() { bd.end(context.Cause(ctx)) })
		if ctx.Err() != nil { // AfterFunc's own goroutine may start late
			bd.end(context.Cause(ctx))
		}
	}
	return bd
}

// bound is one evaluation's bounds. It ends when the evaluation passes one
// or its caller's context (parent) ends: ended is set, cancel cancelled,
// and the context of the bound's own, if one was asked for (context), is
// cancelled with the cause.
type bound struct {
	parent        context.Context
	ended         atomic.Bool
	finished      atomic.Bool // stop was called
	cancel        topdown.Cancel
	watch         *time.Timer
	unwatchParent func() bool
	deadline      time.Time
	timeout       time.Duration

	mu        sync.Mutex
	cause     error                   // why it ended: the first cause
	ctxCancel context.CancelCauseFunc // the cancel of ctx, once made
	ctx       context.Context
}

// planOptions are the options of a plan's evaluation within b.
func (b *bound) planOptions(o plan.Options) plan.Options {
	o.Cancel, o.Stop = b.cancel, &b.ended
	return o
}

// context is a context that ends with b, for what watches a context rather
// than b's flag (topdown, and what it calls): made on the first call.
func (b *bound) context() context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == nil {
		b.ctx, b.ctxCancel = context.WithCancelCause(b.parent)
		if b.cause != nil {
			b.ctxCancel(b.cause)
		}
	}
	return b.ctx
}

// end ends b for cause, unless it ended before.
func (b *bound) end(cause error) {
	b.mu.Lock()
	if b.cause == nil {
		b.cause = cause
	}
	cancel := b.ctxCancel
	b.mu.Unlock()
	b.ended.Store(true)
	b.cancel.Cancel()
	if cancel != nil {
		cancel(cause)
	}
}

// over reports whether the evaluation passed a bound or its caller gave
// up. An evaluation that ended past its deadline passed it, whether or not
// the timer has fired yet: b is ended now.
func (b *bound) over() bool {
	if b.parent.Err() != nil {
		return true
	}
	if !b.ended.Load() && !time.Now().Before(b.deadline) {
		b.end(pastDeadline(b.timeout))
	}
	return b.ended.Load()
}

// stopped says why a bounded evaluation ended early: the message of a
// deny, and the error to return (the parent's own, when the caller gave
// up; nil when a bound stopped it, which is the policy's fault and only a
// deny).
func (b *bound) stopped() (string, error) {
	if err := b.parent.Err(); err != nil {
		return "policy evaluation stopped: " + err.Error(), err
	}
	b.mu.Lock()
	cause := b.cause
	b.mu.Unlock()
	var eb *errBound
	if errors.As(cause, &eb) {
		return "policy evaluation stopped: " + eb.msg, nil
	}
	return "policy evaluation stopped: " + context.Canceled.Error(), nil
}

// stop releases the bounds.
func (b *bound) stop() {
	b.finished.Store(true)
	b.watch.Stop()
	if b.unwatchParent != nil {
		b.unwatchParent()
	}
	b.mu.Lock()
	cancel := b.ctxCancel
	b.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
}

func pastDeadline(timeout time.Duration) error {
	return &errBound{fmt.Sprintf("it ran past its deadline of %v ([policy] timeout)", timeout)}
}

// watchBounds ends b at its deadline, or when the heap grows by more than
// bounds.Memory first, whichever comes before b ends or is stopped (which
// it sees within memoryWatchEvery).
func (b *bound) watchBounds(bounds Bounds) {
	late := time.NewTimer(time.Until(b.deadline))
	defer late.Stop()
	base := heapBytes()
	tick := time.NewTicker(memoryWatchEvery)
	defer tick.Stop()
	for !b.finished.Load() && !b.ended.Load() {
		select {
		case <-b.parent.Done():
			return
		case <-late.C:
			b.end(pastDeadline(bounds.Timeout))
			return
		case <-tick.C:
			if h := heapBytes(); h > base && h-base > bounds.Memory {
				b.end(&errBound{fmt.Sprintf("it grew the heap by more than %d MiB", bounds.Memory>>20)})
				return
			}
		}
	}
}

// heapBytes is the memory of the heap's live and not yet swept objects.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
