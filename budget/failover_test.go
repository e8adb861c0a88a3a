//go:build failover

// The failover tests take half a minute (a Sentinel turns a master that
// lost its place into a replica some 15 seconds after the failover): make
// test-redis-cluster runs them, with -tags failover.

package budget

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentharness/harness/internal/testredis"
)

// raceStats are what racing callers saw.
type raceStats struct {
	granted, failed atomic.Int64
	slowest         atomic.Int64 // nanoseconds, of any one operation
	mu              sync.Mutex
	errs            []string // distinct error messages
}

func (st *raceStats) took(start time.Time, err error) {
	d := int64(time.Since(start))
	for {
		cur := st.slowest.Load()
		if d <= cur || st.slowest.CompareAndSwap(cur, d) {
			break
		}
	}
	if err != nil {
		st.failed.Add(1)
		st.mu.Lock()
		if !slices.Contains(st.errs, err.Error()) && len(st.errs) < 20 {
			st.errs = append(st.errs, err.Error())
		}
		st.mu.Unlock()
	}
}

// racers has n goroutines take session k's shell slots as governors do
// (read, check the limit, compare-and-swap, again on a conflict) until the
// count reaches limit. An operation that fails is counted and the racer
// starts again; the limit may be lowered from infinite while they run. It
// returns a channel closed when every racer is done.
func racers(s Store, k Key, n int, limit *atomic.Int64, st *raceStats) <-chan struct{} {
	ctx := context.Background()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				start := time.Now()
				c, err := s.Get(ctx, k, "")
				st.took(start, err)
				for err == nil && c.Shell < limit.Load() {
					var ok bool
					start = time.Now()
					c, ok, err = s.ReserveShell(ctx, k, "", c)
					st.took(start, err)
					if ok {
						st.granted.Add(1)
						break
					}
				}
				if err == nil && c.Shell >= limit.Load() {
					return
				}
				if err != nil {
					time.Sleep(10 * time.Millisecond) // back off from a failing server (not synchronisation)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// finish lowers the racers' limit to margin slots above the count now,
// waits until they are done, and returns the limit.
func finish(t *testing.T, s Store, k Key, limit *atomic.Int64, margin int64, done <-chan struct{}) int64 {
	t.Helper()
	var c Counters
	testredis.Eventually(t, 30*time.Second, "the count read", func() (bool, string) {
		var err error
		c, err = s.Get(context.Background(), k, "")
		return err == nil, fmt.Sprint(err)
	})
	limit.Store(c.Shell + margin)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the racers never reached the limit %d", c.Shell+margin)
	}
	return c.Shell + margin
}

// A failover of the master that holds a session's slot, while callers race
// for its shell slots, never admits more calls than the limit: first a
// manual failover to its replica (CLUSTER FAILOVER), with stores that do
// and do not wait for a replica to confirm each change; then the new
// master hangs (SIGSTOP) until the cluster counts it failed and the old one
// takes over again. While the slot has no master, operations fail with a
// clear error within the timeout, never hang; afterwards the store follows
// the new master and the racers take exactly the slots that are left.
func TestRedisClusterFailover(t *testing.T) {
	t.Parallel()
	c := testredis.StartCluster(t, 3)
	const timeout = time.Second
	s := openRedisAt(t, c.URL(), Options{Timeout: timeout})
	waiting := openRedisAt(t, c.URL(), Options{Timeout: timeout, Replicas: 1})
	k := Key{Agent: "racer", Session: "s"}
	first := c.MasterOf(t, c.Nodes[0], s.key(k))
	if w := c.MasterOf(t, c.Nodes[0], waiting.key(k)); w != first {
		t.Fatalf("the stores' keys of agent %q are on %s and %s", k.Agent, first.Addr(), w.Addr())
	}
	second := c.AddReplica(t, first)
	others := slices.DeleteFunc(slices.Clone(c.Nodes), func(n *testredis.Server) bool { return n == first || n == second })
	ctx := context.Background()

	// check: the count is the limit, and the phase's racers were granted
	// every slot they took since from, but for those whose operation
	// failed after the server took it.
	check := func(phase string, s Store, st *raceStats, from, limit int64) {
		t.Helper()
		cur, err := s.Get(ctx, k, "")
		if err != nil {
			t.Fatal(err)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		t.Logf("%s: %d granted, %d failed operations, the slowest %v, limit %d, count %d; errors: %q",
			phase, st.granted.Load(), st.failed.Load(), time.Duration(st.slowest.Load()), limit, cur.Shell, st.errs)
		if cur.Shell != limit {
			t.Errorf("%s: count %d, want exactly the limit %d", phase, cur.Shell, limit)
		}
		if g, taken := st.granted.Load(), cur.Shell-from; g > taken || taken > g+st.failed.Load() {
			t.Errorf("%s: %d granted, %d slots taken (failed operations: %d)", phase, g, taken, st.failed.Load())
		}
		for _, e := range st.errs {
			if !strings.HasPrefix(e, "redis ledger") {
				t.Errorf("%s: an error that does not say what failed: %q", phase, e)
			}
		}
	}

	// A manual failover: the master hands the slot over once its replica
	// has every write, and becomes the replica.
	var st1, stw raceStats
	var limit, limitw atomic.Int64
	limit.Store(math.MaxInt64)
	limitw.Store(math.MaxInt64)
	done := racers(s, k, 12, &limit, &st1)
	donew := racers(waiting, k, 4, &limitw, &stw)
	testredis.Eventually(t, 30*time.Second, "reservations before the failover", func() (bool, string) {
		return st1.granted.Load() >= 50 && stw.granted.Load() >= 20, fmt.Sprint(st1.granted.Load(), stw.granted.Load())
	})
	second.Do(t, "cluster", "failover")
	c.WaitMaster(t, second, s.key(k), c.Nodes...)
	before, beforew := st1.granted.Load(), stw.granted.Load()
	testredis.Eventually(t, 30*time.Second, "reservations after the failover", func() (bool, string) {
		return st1.granted.Load() >= before+50 && stw.granted.Load() >= beforew+20, fmt.Sprint(st1.granted.Load()-before, stw.granted.Load()-beforew)
	})
	n := finish(t, s, k, &limit, 100, done)
	check("manual failover", s, &st1, 0, n)
	check("manual failover, waiting for a replica", waiting, &stw, 0, finish(t, waiting, k, &limitw, 50, donew))

	// The master hangs: no answer, no closed connection. The cluster
	// counts it failed after its node timeout and promotes its replica.
	var st2 raceStats
	limit.Store(math.MaxInt64)
	done = racers(s, k, 16, &limit, &st2)
	testredis.Eventually(t, 30*time.Second, "reservations before the hang", func() (bool, string) {
		return st2.granted.Load() >= 50, fmt.Sprint(st2.granted.Load())
	})
	second.Pause(t)
	testredis.Eventually(t, 30*time.Second, "operations failing while the slot has no master", func() (bool, string) {
		return st2.failed.Load() > 0, ""
	})
	c.WaitMaster(t, first, s.key(k), append(others, first)...)
	before = st2.granted.Load()
	testredis.Eventually(t, 30*time.Second, "reservations on the new master", func() (bool, string) {
		return st2.granted.Load() >= before+50, fmt.Sprint(st2.granted.Load() - before)
	})
	check("a hung master", s, &st2, n, finish(t, s, k, &limit, 100, done))
	if slow := time.Duration(st2.slowest.Load()); slow > timeout+time.Second {
		t.Errorf("an operation took %v, beyond the timeout of %v", slow, timeout)
	}
	second.Resume(t)
}

// A Sentinel-watched master fails over to its replica (SENTINEL FAILOVER)
// while sessions are charged and callers race for shell slots: the store
// follows the new master, no count that it confirmed is lost, and no more
// calls are admitted than the limit.
func TestRedisSentinel(t *testing.T) {
	t.Parallel()
	set := testredis.StartSentinel(t, 3)
	t.Run("contract", func(t *testing.T) {
		runContract(t, func(t *testing.T) Store { return openRedisAt(t, set.URL(), Options{}) })
	})

	s := openRedisAt(t, set.URL(), Options{Timeout: time.Second})
	ctx := context.Background()
	const writers, period = 8, "total"
	var acked, failed [writers]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			k := Key{Agent: "writer", Session: fmt.Sprint("w-", i)}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Charge(ctx, k, period, 1, 10); err != nil {
					failed[i].Add(1)
					time.Sleep(10 * time.Millisecond) // back off from a failing server (not synchronisation)
					continue
				}
				acked[i].Add(1)
			}
		})
	}
	total := func() (n int64) {
		for i := range writers {
			n += acked[i].Load()
		}
		return n
	}
	var st raceStats
	var limit atomic.Int64
	limit.Store(math.MaxInt64)
	k := Key{Agent: "racer", Session: "s"}
	done := racers(s, k, 8, &limit, &st)

	testredis.Eventually(t, 30*time.Second, "charges before the failover", func() (bool, string) { return total() >= 200, fmt.Sprint(total()) })
	t0 := time.Now()
	set.Failover(t)
	t.Logf("failover: %v", time.Since(t0))
	// The store follows: the new master itself gets the charges.
	key := s.key(Key{Agent: "writer", Session: "w-0"})
	var base int64
	testredis.Eventually(t, 30*time.Second, "charges on the new master", func() (bool, string) {
		n, err := set.Master.Admin.HGet(ctx, key, "tokens").Int64()
		if base == 0 {
			base = n
		}
		return err == nil && n >= base+50, fmt.Sprint(n-base, err)
	})
	t.Logf("charges on the new master: %v after the failover began", time.Since(t0))
	close(stop)
	wg.Wait()
	n := finish(t, s, k, &limit, 50, done)

	var sum int64
	for i := range writers {
		c, err := s.Get(ctx, Key{Agent: "writer", Session: fmt.Sprint("w-", i)}, period)
		if err != nil {
			t.Fatal(err)
		}
		a, f := acked[i].Load(), failed[i].Load()
		if c.Tokens < a || c.Tokens > a+f || c.CostMicros != 10*c.Tokens {
			t.Errorf("writer %d: %d tokens and %d µ$ counted, %d charges confirmed and %d failed", i, c.Tokens, c.CostMicros, a, f)
		}
		sum += c.Tokens
		if i == writers-1 && c.AgentUsage.Tokens != sum {
			t.Errorf("the agent's tokens %d, the sessions' %d", c.AgentUsage.Tokens, sum)
		}
	}
	cur, _ := s.Get(ctx, k, "")
	t.Logf("%d charges confirmed; racers: %d granted, %d failed, count %d of limit %d; errors %q", total(), st.granted.Load(), st.failed.Load(), cur.Shell, n, st.errs)
	if cur.Shell != n || st.granted.Load() > n {
		t.Errorf("racers: %d granted, count %d, limit %d", st.granted.Load(), cur.Shell, n)
	}
}
