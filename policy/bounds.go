package policy

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"sync/atomic"
	"time"
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
func (e *Engine) bounded(ctx context.Context) bound {
	return e.boundedBy(ctx, e.bounds.get())
}

// boundedView is bounded for an evaluation of none of the custom
// policies' rules: the memory bound, and the longer deadline of views.
func (e *Engine) boundedView(ctx context.Context) bound {
	b := e.bounds.get()
	b.Timeout = viewTimeout(b)
	return e.boundedBy(ctx, b)
}

func (e *Engine) boundedBy(ctx context.Context, b Bounds) bound {
	ctx, cancel := context.WithCancelCause(ctx)
	// One timer watches both bounds, and it fires only for evaluations
	// that last (few do): a decision pays for one context and one timer,
	// not for a context and a timer per bound.
	deadline := time.Now().Add(b.Timeout)
	watch := time.AfterFunc(min(memoryWatchAfter, b.Timeout), func() { watchBounds(ctx, cancel, b, deadline) })
	return bound{ctx: ctx, cancel: cancel, watch: watch, deadline: deadline, timeout: b.Timeout}
}

// bound is one evaluation's bounds: ctx, the evaluation's context, ends
// when it passes one (or its caller's context ends).
type bound struct {
	ctx      context.Context
	cancel   context.CancelCauseFunc
	watch    *time.Timer
	deadline time.Time
	timeout  time.Duration
}

// over reports whether the evaluation passed a bound or its caller gave
// up. An evaluation that ended past its deadline passed it, whether or not
// the timer has fired yet: ctx is ended now.
func (b *bound) over() bool {
	if b.ctx.Err() == nil && !time.Now().Before(b.deadline) {
		b.cancel(pastDeadline(b.timeout))
	}
	return b.ctx.Err() != nil
}

// stop releases the bounds.
func (b *bound) stop() {
	b.watch.Stop()
	b.cancel(nil)
}

func pastDeadline(timeout time.Duration) error {
	return &errBound{fmt.Sprintf("it ran past its deadline of %v ([policy] timeout)", timeout)}
}

// watchBounds cancels ctx at deadline, or when the heap grows by more than
// b.Memory first, whichever comes before ctx ends.
func watchBounds(ctx context.Context, cancel context.CancelCauseFunc, b Bounds, deadline time.Time) {
	late := time.NewTimer(time.Until(deadline))
	defer late.Stop()
	base := heapBytes()
	tick := time.NewTicker(memoryWatchEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-late.C:
			cancel(pastDeadline(b.Timeout))
			return
		case <-tick.C:
			if h := heapBytes(); h > base && h-base > b.Memory {
				cancel(&errBound{fmt.Sprintf("it grew the heap by more than %d MiB", b.Memory>>20)})
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

// stopped says why a bounded evaluation under parent ended early: the
// message of a deny, and the error to return (the parent's own, when the
// caller gave up; nil when a bound stopped it, which is the policy's
// fault and only a deny).
func stopped(parent, ctx context.Context) (string, error) {
	if err := parent.Err(); err != nil {
		return "policy evaluation stopped: " + err.Error(), err
	}
	var b *errBound
	if errors.As(context.Cause(ctx), &b) {
		return "policy evaluation stopped: " + b.msg, nil
	}
	return "policy evaluation stopped: " + ctx.Err().Error(), nil
}
