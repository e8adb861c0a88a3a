package budget

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Changes of many callers at once, sent together in pipelines, are each
// made exactly once: every caller's compare-and-swap reservations and
// charges on its own session, and all of them on the agent's counters
// that the sessions share, add up. The server forgets its scripts midway
// (SCRIPT FLUSH), so that pipelined changes meet NOSCRIPT, did not run,
// and are sent again with the script's text.
func TestRedisPipelinedChangesAddUp(t *testing.T) {
	ctx := context.Background()
	r, err := OpenRedis(ctx, redisURL(t), Options{Prefix: fmt.Sprintf("pipe:%d:", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const callers, rounds = 64, 40
	const period = "total"
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := Key{Agent: "a", Session: fmt.Sprint("s", i)}
			cur, err := r.Get(ctx, k, period)
			if err != nil {
				errs <- err
				return
			}
			for n := 0; n < rounds; {
				if i == 0 && n == rounds/2 {
					if err := r.client.ScriptFlush(ctx).Err(); err != nil {
						errs <- err
						return
					}
				}
				next, ok, err := r.ReserveShell(ctx, k, period, cur)
				if err != nil {
					errs <- err
					return
				}
				cur = next
				if !ok { // another session took an agent's slot first
					continue
				}
				if cur, err = r.Charge(ctx, k, period, 3, 7); err != nil {
					errs <- err
					return
				}
				if cur.Shell != int64(n+1) || cur.Tokens != int64(3*(n+1)) {
					errs <- fmt.Errorf("%v after %d rounds: %+v", k, n+1, cur)
					return
				}
				n++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	agent, err := r.Get(ctx, Key{Agent: "a", Session: "s0"}, period)
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{Tokens: 3 * callers * rounds, Shell: callers * rounds, CostMicros: 7 * callers * rounds}
	if agent.AgentUsage != want {
		t.Errorf("the agent's counters: %+v, want %+v", agent.AgentUsage, want)
	}
	if r.batch.shared.Load() == 0 {
		t.Error("no change was sent in a pipeline with others: the test did not test them")
	}
	t.Logf("%d changes (compare-and-swaps that lost among them) sent in pipelines of several", r.batch.shared.Load())
}

// A caller whose context ends while its change waits for a pipeline gets
// its context's error, and its change is not sent; the others' changes go
// on.
func TestRedisPipelineCallerGivesUp(t *testing.T) {
	ctx := context.Background()
	r, err := OpenRedis(ctx, redisURL(t), Options{Prefix: fmt.Sprintf("pipe:%d:", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Every flight taken: the next change queues.
	r.batch.mu.Lock()
	r.batch.flights = maxFlights
	r.batch.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := r.Charge(cctx, Key{Session: "gives-up"}, "", 1, 1); err == nil {
		t.Fatal("a change queued behind flights that never end returned no error")
	}
	// A flight ends: it sends what queued, and frees itself.
	done := make(chan error, 1)
	go func() { _, err := r.Charge(ctx, Key{Session: "waits"}, "", 1, 1); done <- err }()
	for {
		r.batch.mu.Lock()
		n := len(r.batch.queue)
		r.batch.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	r.batch.next()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c, err := r.Get(ctx, Key{Session: "waits"}, "")
	if err != nil || c.Tokens != 1 {
		t.Fatalf("the change that waited: %+v %v", c, err)
	}
	if c, err := r.Get(ctx, Key{Session: "gives-up"}, ""); err != nil || c.Tokens != 0 {
		t.Fatalf("the change whose caller gave up before it was sent was made: %+v %v", c, err)
	}
}
