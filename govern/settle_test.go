package govern

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy"
)

// settleGovernor has a role of 2,000 tokens (blocking at 100%).
func settleGovernor(t *testing.T, s budget.Store) *Governor {
	t.Helper()
	set := testroles.Set(t, map[string]string{"small": "[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 2000\n"})
	e, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Rules: Rules{Engine: relaxed(e), Roles: set, DefaultRole: "small"}, Store: s})
}

// Parallel calls of one session, each bringing back far more than the
// budget has: together they take exactly what is left, never more, and
// what each brings is cut to what it was granted.
func TestSettleNeverPassesTheBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := settleGovernor(t, s)
			k := budget.Key{Agent: "a", Session: "s"}
			big := strings.Repeat("the quick brown fox jumps over the lazy dog ", 1200) // about 10,800 tokens
			var granted, shown atomic.Int64
			var wg sync.WaitGroup
			for range 10 {
				wg.Go(func() {
					st, err := g.Settle(ctx, Output{Session: k, Tool: "ctx_read", Parts: []Part{{Text: big}}})
					if err != nil {
						t.Error(err)
						return
					}
					granted.Add(st.OutputTokens)
					n, _ := g.tokens.Count(st.Parts[0].Text)
					shown.Add(n)
					if st.OutputTokens+st.Withheld != st.Wanted || st.Parts[0].Cut != (st.Withheld > 0) {
						t.Errorf("settlement %+v", st)
					}
				})
			}
			wg.Wait()
			st, err := g.Status(ctx, k, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Budget.Tokens.Used; got != granted.Load() || got > 2000 || got < 1990 || shown.Load() != got {
				t.Errorf("tokens used %d (granted %d, shown %d), limit 2000", got, granted.Load(), shown.Load())
			}
			if st.Signal != contract.LevelExhausted {
				t.Errorf("signal %s", st.Signal)
			}
			// Nothing more reaches the agent once exhausted.
			if st, _ := g.Settle(ctx, Output{Session: k, Tool: "ctx_read", Parts: []Part{{Text: "x"}, {Binary: true, Tokens: 100}}}); !st.Parts[0].Dropped || !st.Parts[1].Dropped || st.OutputTokens != 0 {
				t.Errorf("after exhaustion: %+v", st)
			}
		})
	}
}

// Parts are kept in order: the first that does not fit is cut (text) or
// dropped (anything else), and so is everything after it that does not
// fit what is left.
func TestSettleKeepsPartsInOrder(t *testing.T) {
	t.Parallel()
	g := settleGovernor(t, budget.NewMemory())
	ctx := context.Background()
	k := budget.Key{Session: "order"}
	if _, err := g.Settle(ctx, Output{Session: k, Parts: []Part{{Text: strings.Repeat("word ", 1990)}}}); err != nil {
		t.Fatal(err)
	}
	before, _ := g.Status(ctx, k, "")
	left := 2000 - before.Budget.Tokens.Used
	st, err := g.Settle(ctx, Output{Session: k, Parts: []Part{{Text: "a b"}, {Binary: true, Tokens: 50}, {Text: strings.Repeat("word ", 100)}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range st.Parts {
		got = append(got, fmt.Sprintf("%v/%v", p.Cut, p.Dropped))
	}
	// a b is 2 tokens; the rest of the text's tokens are one word each.
	if fmt.Sprint(got) != "[false/false false/true true/false]" || st.Parts[0].Tokens != 2 || st.Parts[2].Tokens != left-2 || st.OutputTokens != left {
		t.Errorf("parts %v %+v, charged %d of %d left", got, st.Parts, st.OutputTokens, left)
	}
}

// A text with something beside it (a resource's blob) is counted with
// it, and is kept whole or dropped, never cut.
func TestSettleKeepsATextWithItsBlobWhole(t *testing.T) {
	t.Parallel()
	g := settleGovernor(t, budget.NewMemory())
	ctx := context.Background()
	k := budget.Key{Session: "beside"}
	st, err := g.Settle(ctx, Output{Session: k, Parts: []Part{{Text: "a b", Beside: 3}}})
	if err != nil || st.Parts[0].Dropped || st.Parts[0].Cut || st.Parts[0].Tokens != 5 || st.OutputTokens != 5 {
		t.Fatalf("within the budget: %+v, %v", st, err)
	}
	st, err = g.Settle(ctx, Output{Session: k, Parts: []Part{{Text: strings.Repeat("word ", 1000), Beside: 1500}}})
	if err != nil || !st.Parts[0].Dropped || st.Parts[0].Cut || st.OutputTokens != 0 {
		t.Errorf("past the budget: %+v, %v", st, err)
	}
}

// A whole text (a listed item, a blob's base64) is counted as its tokens
// and at least its Tokens, and is kept whole or dropped, never cut.
func TestSettleKeepsAWholeTextWhole(t *testing.T) {
	t.Parallel()
	g := settleGovernor(t, budget.NewMemory())
	ctx := context.Background()
	k := budget.Key{Session: "whole"}
	st, err := g.Settle(ctx, Output{Session: k, Parts: []Part{{Text: "a b", Whole: true}, {Text: "a b", Whole: true, Tokens: 7}}})
	if err != nil || st.Parts[0].Dropped || st.Parts[0].Tokens != 2 || st.Parts[1].Tokens != 7 || st.OutputTokens != 9 {
		t.Fatalf("within the budget: %+v, %v", st, err)
	}
	st, err = g.Settle(ctx, Output{Session: k, Parts: []Part{{Text: strings.Repeat("word ", 1000000), Whole: true}}})
	if err != nil || !st.Parts[0].Dropped || st.Parts[0].Cut || st.OutputTokens != 0 {
		t.Errorf("past the budget: %+v, %v", st.Charge, err)
	}
}

// An allowance worked out ahead is used only for the counters it was
// worked out on: when another charge came first, the charge works out
// what is left again and cuts to it (the headroom of the counters the
// call was decided on would let it pass the budget).
func TestHeadroomOnlyForItsCounters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := settleGovernor(t, s)
			k := budget.Key{Agent: "a", Session: "s"}
			at, err := g.Session(ctx, k, "")
			if err != nil {
				t.Fatal(err)
			}
			h := g.Prefetch(ctx, k, at)
			text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 50) // about 450 tokens
			// Another call of the session charges first.
			for range 4 {
				if _, err := g.Settle(ctx, Output{Session: k, Tool: "ctx_read", Parts: []Part{{Text: text}}}); err != nil {
					t.Fatal(err)
				}
			}
			st, err := g.Settle(ctx, Output{Session: k, Tool: "ctx_read", Parts: []Part{{Text: text}}, Counters: &at, Headroom: h})
			if err != nil {
				t.Fatal(err)
			}
			if st.After.Tokens > 2000 || st.Withheld == 0 {
				t.Errorf("charged on a stale headroom: %+v", st.Charge)
			}
			// On the counters it was worked out on, it is what the policy
			// says.
			now, _ := g.Session(ctx, k, "")
			h = g.Prefetch(ctx, k, now)
			if al, ok := h.allowance(g.rules.Load(), now, ""); !ok || al.Tokens == nil || *al.Tokens != 2000-now.Tokens {
				t.Errorf("headroom at %d tokens: %+v %v", now.Tokens, al, ok)
			}
		})
	}
}

// A decision asked to prefetch (Call.Prefetch, with Background) carries the
// headroom of an allowed call at the counters it was decided on, what the
// policy's allowance says there; a refused call, or one not asked, none.
func TestDecisionPrefetchesItsHeadroom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := settleGovernor(t, budget.NewMemory())
	k := budget.Key{Agent: "a", Session: "s"}
	if _, err := g.Settle(ctx, Output{Session: k, Tool: "ctx_read", Parts: []Part{{Text: strings.Repeat("word ", 300)}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		call     Call
		allowed  bool
		headroom bool
	}{
		{"allowed, prefetched", Call{Session: k, Tool: "ctx_read", Background: true, Prefetch: true}, true, true},
		{"allowed, not asked", Call{Session: k, Tool: "ctx_read", Background: true}, true, false},
		{"refused", Call{Session: k, Tool: "ctx_read", Arguments: "not an object", Background: true, Prefetch: true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := g.Decide(ctx, tc.call)
			if err != nil {
				t.Fatal(err)
			}
			o.Wait()
			if o.Allowed != tc.allowed || (o.Headroom != nil) != tc.headroom {
				t.Fatalf("headroom %v, want %v (allowed %v)", o.Headroom != nil, tc.headroom, o.Allowed)
			}
			if o.Headroom == nil {
				return
			}
			al, ok := o.Headroom.allowance(g.rules.Load(), o.Counters, o.Period)
			if !ok || al.Tokens == nil || *al.Tokens != 2000-o.Counters.Tokens || o.Counters.Tokens == 0 {
				t.Errorf("headroom at %d tokens: %+v %v", o.Counters.Tokens, al, ok)
			}
		})
	}
}

// A decision made with Call.Later does nothing in the background until it
// is started, by Start, by Run (on the caller's goroutine), by Wait, or by
// Settle's use of its headroom, whichever comes first; it is never done
// twice.
func TestLaterWorkWaitsToBeStarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := settleGovernor(t, budget.NewMemory())
	k := budget.Key{Agent: "a", Session: "later"}
	for _, tc := range []struct {
		name  string
		start func(Outcome)
	}{
		{"Start", func(o Outcome) { o.Start(); o.Start() }},
		{"Run, on this goroutine", func(o Outcome) {
			o.Run()
			select {
			case <-o.written:
			default:
				t.Error("Run returned before the decision was logged")
			}
			o.Run()
			o.Start()
		}},
		{"Wait", func(o Outcome) {}},
		{"the headroom", func(o Outcome) {
			if _, ok := o.Headroom.allowance(g.rules.Load(), o.Counters, o.Period); !ok {
				t.Error("no allowance from the headroom")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_read", Background: true, Later: true, Prefetch: true})
			if err != nil || !o.Allowed || o.Headroom == nil {
				t.Fatalf("%+v %v", o, err)
			}
			select {
			case <-o.written:
				t.Fatal("the decision was logged before it was started")
			case <-o.Headroom.done:
				t.Fatal("the allowance was worked out before it was started")
			default:
			}
			tc.start(o)
			o.Wait()
			<-o.Headroom.done
		})
	}
}
