package budget

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A gateway serving many sessions makes many small ledger changes at once,
// each one script of one round trip. Sent one per round trip, they spend
// the machine's time in system calls and wake-ups (a client's and the
// server's) more than in Redis; sent together, as one pipeline, a round
// trip carries many. batcher does that: a change that finds fewer than
// maxFlights pipelines under way is sent at once, alone; one that finds
// them all under way waits for the next pipeline, which the first of them
// to finish sends with every change that queued meanwhile. One caller's
// change is thus sent as before, in one round trip, and many callers'
// changes share round trips.
//
// Nothing of what a change means moves: each script still runs atomically
// on the server, on its own keys, in the order the pipeline has them, and
// its reply is its caller's alone. A pipeline is never sent again (the
// client's MaxRetries is -1): a change whose reply is lost is an error for
// its caller, as when it was sent alone. A script the server does not have
// (NOSCRIPT) did not run, and is sent again with its text.

// maxFlights is how many pipelines may be under way at once: a few, so
// that a pipeline's round trip overlaps the next one's queueing.
const maxFlights = 4

// maxBatch bounds a pipeline's changes, so that a reply stays small and no
// caller waits long behind others.
const maxBatch = 128

// batchOp is one script to run, and where its reply goes.
type batchOp struct {
	ctx    context.Context // its caller's
	script *redis.Script
	keys   []string
	args   []any
	res    []any
	err    error
	done   chan struct{}
}

// batcher sends the changes of concurrent callers together.
type batcher struct {
	client  redis.UniversalClient
	timeout time.Duration // of a pipeline of queued changes

	mu      sync.Mutex
	flights int
	queue   []*batchOp

	// shared counts the changes sent in pipelines of several (for tests).
	shared atomic.Int64
}

// run runs one script and returns its reply: at once when a flight is
// free, else in the next pipeline. It returns early, with ctx's error,
// when ctx ends first: a change whose caller's context ended before its
// pipeline was sent is not sent; once sent, it may have run or not (as a
// reply lost on the way), and the caller counts it as failed.
func (b *batcher) run(ctx context.Context, s *redis.Script, keys []string, args []any) ([]any, error) {
	op := &batchOp{ctx: ctx, script: s, keys: keys, args: args, done: make(chan struct{})}
	b.mu.Lock()
	if b.flights < maxFlights {
		b.flights++
		b.mu.Unlock()
		b.send(ctx, []*batchOp{op})
		b.next()
		return op.res, op.err
	}
	b.queue = append(b.queue, op)
	b.mu.Unlock()
	select {
	case <-op.done:
		return op.res, op.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// next sends what queued while a flight was under way, in another
// goroutine (its caller has its reply), or frees the flight.
func (b *batcher) next() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.flights--
		return
	}
	batch := b.take()
	go func() {
		for batch != nil {
			ctx, cancel := b.timeoutCtx()
			b.send(ctx, batch)
			cancel()
			b.mu.Lock()
			if batch = nil; len(b.queue) > 0 {
				batch = b.take()
			} else {
				b.flights--
			}
			b.mu.Unlock()
		}
	}()
}

// take is the queue's first maxBatch changes; b.mu is held.
func (b *batcher) take() []*batchOp {
	n := min(len(b.queue), maxBatch)
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	if len(b.queue) == 0 {
		b.queue = nil
	}
	return batch
}

// timeoutCtx bounds a pipeline of several callers' changes: by the
// store's timeout, whatever the context of any one of them.
func (b *batcher) timeoutCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.timeout)
}

// send runs the changes as one pipeline (one alone as one command) and
// hands each its reply.
func (b *batcher) send(ctx context.Context, batch []*batchOp) {
	defer func(all []*batchOp) {
		for _, op := range all {
			close(op.done)
		}
	}(batch)
	live := make([]*batchOp, 0, len(batch))
	for _, op := range batch {
		if op.err = op.ctx.Err(); op.err == nil {
			live = append(live, op)
		}
	}
	switch batch = live; len(batch) {
	case 0:
		return
	case 1:
		op := batch[0]
		op.res, op.err = op.script.Run(ctx, b.client, op.keys, op.args...).Slice()
		return
	}
	b.shared.Add(int64(len(batch)))
	cmds := b.pipeline(ctx, batch, true)
	var again []*batchOp // not run: the server did not have the script
	for i, op := range batch {
		if redis.HasErrorPrefix(cmds[i].Err(), "NOSCRIPT") {
			again = append(again, op)
			continue
		}
		op.res, op.err = cmds[i].Slice()
	}
	if len(again) > 0 {
		cmds = b.pipeline(ctx, again, false)
		for i, op := range again {
			op.res, op.err = cmds[i].Slice()
		}
	}
}

// pipeline sends each change's script by its SHA (loaded) or its text.
func (b *batcher) pipeline(ctx context.Context, batch []*batchOp, loaded bool) []*redis.Cmd {
	pipe := b.client.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, op := range batch {
		if loaded {
			cmds[i] = op.script.EvalSha(ctx, pipe, op.keys, op.args...)
		} else {
			cmds[i] = op.script.Eval(ctx, pipe, op.keys, op.args...)
		}
	}
	pipe.Exec(ctx) // each command has its own error
	return cmds
}
