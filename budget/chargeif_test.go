package budget

import (
	"context"
	"math"
	"strings"
	"testing"
)

// A charge or a shell reservation against counters that are all still as
// its decision saw them changes the SQLite ledger without a statement that
// returns its row, and gives the counters every store gives. Against
// counters another call moved, it is the contract's: a charge compares
// tokens and cost alone, a reservation the shell counts and the role; it
// lands if those are as expected, with the counters as they are. Every
// case runs on every store, and the memory store's answer is the one to
// match.
func TestChangesWithoutReturning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const day = "day:2026-12-03"
	k := Key{Agent: "a", Session: "s"}
	type step func(t *testing.T, s Store, cur Counters) Counters
	charge := func(tokens, cost int64) step {
		return func(t *testing.T, s Store, _ Counters) Counters {
			c, err := s.Charge(ctx, k, day, tokens, cost)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	role := func(name string) step {
		return func(t *testing.T, s Store, _ Counters) Counters {
			c, err := s.SetRole(ctx, k, name)
			if err != nil {
				t.Fatal(err)
			}
			c, _ = s.Get(ctx, k, day)
			return c
		}
	}
	shell := func(t *testing.T, s Store, _ Counters) Counters {
		c, err := s.AddShell(ctx, k, day)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	otherShell := func(t *testing.T, s Store, cur Counters) Counters { // the agent's other session
		if _, err := s.AddShell(ctx, Key{Agent: k.Agent, Session: "t"}, day); err != nil {
			t.Fatal(err)
		}
		return cur
	}
	pin := func(t *testing.T, s Store, _ Counters) Counters {
		if _, err := s.PinProject(ctx, k, "/p"); err != nil {
			t.Fatal(err)
		}
		c, _ := s.Get(ctx, k, day)
		return c
	}
	for _, tc := range []struct {
		name   string
		before []step // to the counters the charge is worked out on
		// between moves the counters after they were read, as another
		// call would.
		between []step
		period  Period
		// returned: the SQLite ledger ran a statement that returns a row
		// (the contract's); charged, reserved: the charge, the
		// reservation landed.
		returned, charged, reserved bool
		err                         bool // the charge was refused: nothing changed
	}{
		{name: "all as expected", before: []step{role("coder"), charge(10, 5)}, period: day, charged: true, reserved: true},
		{name: "all as expected, no period", before: []step{role("coder"), charge(10, 5)}, charged: true, reserved: true},
		{name: "all as expected, nothing charged yet", before: []step{role("coder")}, period: day, returned: true, charged: true, reserved: true},
		{name: "all as expected, pinned, with shell calls", before: []step{role("coder"), pin, shell, charge(3, 1)}, period: day, charged: true, reserved: true},
		{name: "a new session", period: day, returned: true, charged: true, reserved: true},
		{name: "the shell count moved", before: []step{role("coder"), charge(10, 5)}, between: []step{shell}, period: day, returned: true, charged: true},
		{name: "the role moved", before: []step{role("coder"), charge(10, 5)}, between: []step{role("reviewer")}, period: day, returned: true, charged: true},
		{name: "the project was pinned", before: []step{role("coder"), charge(10, 5)}, between: []step{pin}, period: day, returned: true, charged: true, reserved: true},
		{name: "the agent's shell count moved", before: []step{role("coder"), charge(10, 5)}, between: []step{otherShell}, period: day, returned: true, charged: true},
		{name: "the tokens moved", before: []step{role("coder"), charge(10, 5)}, between: []step{charge(1, 0)}, period: day, returned: true, reserved: true},
		{name: "the tokens moved, no period", before: []step{role("coder"), charge(10, 5)}, between: []step{charge(1, 0)}, returned: true, reserved: true},
		{name: "a sum past an int64", before: []step{role("coder"), charge(math.MaxInt64-5, 5)}, period: day, err: true, reserved: true},
		{name: "a sum past an int64, the agent's", before: []step{role("coder"), charge(1, 5), func(t *testing.T, s Store, cur Counters) Counters {
			if _, err := s.Charge(ctx, Key{Agent: k.Agent, Session: "t"}, day, math.MaxInt64-3, 0); err != nil {
				t.Fatal(err)
			}
			c, _ := s.Get(ctx, k, day)
			return c
		}}, period: day, err: true, reserved: true},
		{name: "a cost past an int64", before: []step{role("coder"), charge(1, math.MaxInt64-1)}, err: true, reserved: true},
	} {
		for _, op := range []string{"charge", "reserve"} {
			t.Run(op+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				type answer struct {
					c   Counters
					ok  bool
					err bool
				}
				wantOK, wantErr := tc.reserved, false
				if op == "charge" {
					wantOK, wantErr = tc.charged, tc.err
				}
				var want *answer
				for _, name := range []string{"memory", "sqlite", "redis"} {
					s := stores(t)[name]
					var cur Counters
					for _, f := range tc.before {
						cur = f(t, s, cur)
					}
					if tc.period == "" {
						cur.AgentUsage = Usage{}
					}
					for _, f := range tc.between {
						f(t, s, cur)
					}
					sq, _ := s.(*SQLite)
					var rows int64
					if sq != nil {
						rows = sq.rows.Load()
					}
					var c Counters
					var ok bool
					var err error
					if op == "charge" {
						c, ok, err = s.ChargeIf(ctx, k, tc.period, cur, 7, 2)
					} else {
						c, ok, err = s.ReserveShell(ctx, k, tc.period, cur)
					}
					got := answer{c, ok, err != nil}
					if want == nil {
						want = &got
						if ok != wantOK || (err != nil) != wantErr {
							t.Fatalf("memory: ok=%v err=%v, want ok=%v err=%v (%+v)", ok, err, wantOK, wantErr, c)
						}
					} else if got != *want {
						t.Errorf("%s: %+v (%v), memory's %+v", name, got, err, *want)
					}
					if sq != nil {
						if returned := sq.rows.Load() > rows; returned != tc.returned {
							t.Errorf("sqlite: a statement returned a row: %v, want %v", returned, tc.returned)
						}
						// What the ledger holds, read by another store of
						// the file (this one's reads may answer from what
						// it wrote).
						other, err := OpenSQLite(ctx, sq.Path())
						if err != nil {
							t.Fatal(err)
						}
						after, err := other.Get(ctx, k, tc.period)
						other.Close()
						if err != nil || ok && after != c {
							t.Errorf("sqlite: the ledger holds %+v (%v), the change returned %+v", after, err, c)
						}
					}
					if wantErr {
						if after, err := s.Get(ctx, k, tc.period); err != nil || after != cur {
							t.Errorf("%s: a refused charge changed the counters: %+v (%v), before %+v", name, after, err, cur)
						}
					}
				}
			})
		}
	}
}

// A charge that would take a count past the largest int64 is refused and
// changes nothing, as ChargeIf's is: the memory store wrapped the sum
// round to a negative count (a budget without end), and SQLite stored a
// float that no read could take back. A transcript the agent writes is
// charged this way, with usage of its own choosing.
func TestChargePastAnInt64IsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const day = "day:2026-12-03"
	k, other := Key{Agent: "a", Session: "s"}, Key{Agent: "a", Session: "t"}
	for _, tc := range []struct {
		name           string
		period         Period
		session, agent int64 // tokens charged before, to the session and to the agent's other session
		agentCost      int64 // cost charged before to the agent's other session
		tokens, cost   int64
	}{
		{name: "the session's tokens", session: math.MaxInt64 - 5, tokens: 6},
		{name: "the session's cost", cost: math.MaxInt64},
		{name: "the agent's tokens", period: day, session: 1, agent: math.MaxInt64 - 3, tokens: 4},
		{name: "the session's cost, tokens with it", tokens: 5, cost: math.MaxInt64},
		{name: "the agent's cost", period: day, session: 1, agent: 1, agentCost: 5, tokens: 7, cost: math.MaxInt64 - 3},
	} {
		for _, name := range []string{"memory", "sqlite", "redis"} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := stores(t)[name]
				if _, err := s.Charge(ctx, k, tc.period, tc.session, 1); err != nil {
					t.Fatal(err)
				}
				if tc.agent > 0 {
					if _, err := s.Charge(ctx, other, tc.period, tc.agent, tc.agentCost); err != nil {
						t.Fatal(err)
					}
				}
				before, err := s.Get(ctx, k, tc.period)
				if err != nil {
					t.Fatal(err)
				}
				if c, err := s.Charge(ctx, k, tc.period, tc.tokens, tc.cost); err == nil {
					t.Fatalf("charged past an int64: %+v", c)
				}
				if after, err := s.Get(ctx, k, tc.period); err != nil || after != before {
					t.Errorf("a refused charge changed the counters: %+v (%v), before %+v", after, err, before)
				}
				if c, err := s.Charge(ctx, k, tc.period, 0, 0); err != nil || c != before {
					t.Errorf("a charge of nothing after: %+v %v", c, err)
				}
			})
		}
	}
}

// fits says whether a count and a charge (not negative) sum to an int64,
// whatever the count, a negative one (a hand-edited ledger) too.
func TestFits(t *testing.T) {
	for _, tc := range []struct {
		counter, add int64
		fits         bool
	}{
		{0, 0, true}, {math.MaxInt64, 0, true}, {math.MaxInt64, 1, false}, {math.MaxInt64 - 1, 1, true},
		{1, math.MaxInt64, false}, {0, math.MaxInt64, true}, {-5, 1, true}, {-1, 0, true},
		{math.MinInt64, math.MaxInt64, true},
	} {
		if got := fits(tc.counter, tc.add); got != tc.fits {
			t.Errorf("fits(%d, %d) = %v, want %v", tc.counter, tc.add, got, tc.fits)
		}
	}
}

// Redis's compare-and-swap compares the expected counts as Lua's doubles,
// which near 2^63 do not tell counts 1,024 apart: a charge checked
// against counts a little below the real ones could pass the comparison
// and take a real count past an int64. The script checks every count as
// its decimal text before it changes any: the charge is refused whole,
// never half made (HINCRBY's own refusal came after the tokens were added).
func TestRedisChargeNearTheTopIsExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stores(t)["redis"]
	k := Key{Agent: "a", Session: "s"}
	before, err := s.Charge(ctx, k, "", 0, math.MaxInt64-2)
	if err != nil {
		t.Fatal(err)
	}
	expected := before
	expected.CostMicros = math.MaxInt64 - 400 // the same double as the real count
	if float64(expected.CostMicros) != float64(before.CostMicros) {
		t.Fatal("the test's counts are not one double")
	}
	c, ok, err := s.ChargeIf(ctx, k, "", expected, 5, 100)
	if err == nil {
		t.Fatalf("charged past an int64: %+v (%v)", c, ok)
	}
	if after, err := s.Get(ctx, k, ""); err != nil || after != before {
		t.Errorf("a refused charge changed the counters: %+v (%v), before %+v", after, err, before)
	}
}

// A count that is not an integer (a hand-edited ledger) fails a Redis
// charge before it changes anything: HINCRBY's refusal of the cost came
// after the tokens were added.
func TestRedisChargeOfACountNotAnInteger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := stores(t)["redis"].(*Redis)
	k := Key{Agent: "a", Session: "s"}
	if _, err := r.Charge(ctx, k, "", 1, 1); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"1.5", "007", "x", "+3", "-0", ""} {
		if err := r.client.HSet(ctx, r.key(k), "cost", bad).Err(); err != nil {
			t.Fatal(err)
		}
		if c, err := r.Charge(ctx, k, "", 5, 5); err == nil || !strings.Contains(err.Error(), "not an integer") {
			t.Errorf("cost %q: charged %+v, %v", bad, c, err)
		}
		if tokens, err := r.client.HGet(ctx, r.key(k), "tokens").Result(); err != nil || tokens != "1" {
			t.Errorf("cost %q: the tokens are %q (%v), want 1 as before", bad, tokens, err)
		}
	}
}
