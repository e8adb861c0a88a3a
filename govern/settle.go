package govern

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/internal/reuse"
	"github.com/agentharness/harness/policy"
)

// What reaches the agent is charged before it is released, and no more of
// it is released than the budget covers: however many calls of a session
// run at once, its usage never passes an exhaustion threshold of its role
// or its agent's budget (their allowance, as the policy states it), and a
// result is cut to fit what is left.

// Part is one piece of what a call gives back to the agent: a text,
// counted and, if the budget does not cover it, cut; or anything else (an
// image, audio, a binary resource), whose tokens the caller estimated and
// which reaches the agent whole or not at all.
type Part struct {
	Text string
	// Tokens is a part that is not text's estimate (Binary).
	Tokens int64
	Binary bool
	// Beside is the estimate of what comes with a text (a resource's blob
	// beside its text), counted with it: such a part reaches the agent
	// whole or not at all, like a binary one.
	Beside int64
	// Whole is a text that reaches the agent whole or not at all (an item
	// of a list: part of one is no item; a blob's base64), counted as at
	// least Tokens.
	Whole bool
}

// Output is the output of a call to settle.
type Output struct {
	Session budget.Key
	// Role is the role the session starts in if this charge is its first
	// (as Call.Role); "" for the agent's start role (StartRole).
	Role string
	Tool string
	// Arguments as the agent sent them (JSON); their tokens are input.
	Arguments string
	Parts     []Part
	// Model prices the call; "" for the configured default.
	Model string
	// Counters are the session's counters as the caller last had them
	// (the call's decision's), which saves reading them; nil reads them.
	// Stale counters cost a retry, never a wrong charge: the charge is a
	// compare-and-swap on them.
	Counters *budget.Counters
	// Background works out the budget crossings of the charge, and emits
	// their events, after Settle returns (Governor.Wait waits for them),
	// so that the output goes to the agent sooner; the Settlement's
	// Signal is then "".
	Background bool
	// DecisionID is the decision of the call, when known: the charge's
	// log entry names it.
	DecisionID string
	// Headroom is the session's allowance worked out ahead (Prefetch),
	// used when the charge is made on the counters it was worked out on;
	// nil works it out when charging.
	Headroom *Headroom
}

// Headroom is what a session may still spend at given counters (the
// policy's allowance), worked out while its call runs: a charge made on
// those very counters, by the same rules, need not wait for the policy.
type Headroom struct {
	rules    *Rules
	counters budget.Counters
	period   budget.Period
	done     chan struct{}
	in       contract.Input // of the allowance
	al       policy.Allowance
	err      error
	start    func() // does the work, if it waits to be started (Call.Later)
}

// Prefetch starts working out the allowance of session k at counters c,
// to be given to Settle (Output.Headroom).
func (g *Governor) Prefetch(ctx context.Context, k budget.Key, c budget.Counters) *Headroom {
	r := g.rules.Load()
	h := newHeadroom(r, k, c, g.period(r, k.Agent))
	reuse.Go(func() { h.work(ctx) })
	return h
}

// newHeadroom is the headroom of session k at counters c in period, under
// the rules r, for work to work out.
func newHeadroom(r *Rules, k budget.Key, c budget.Counters, period budget.Period) *Headroom {
	return &Headroom{rules: r, counters: c, period: period, done: make(chan struct{}), in: statusInput(k, c, period)}
}

// work works out h's allowance.
func (h *Headroom) work(ctx context.Context) {
	defer close(h.done)
	h.al, h.err = h.rules.Engine.Allowance(context.WithoutCancel(ctx), h.in)
}

// allowance is h's allowance if it was worked out for the counters cur,
// period and rules r.
func (h *Headroom) allowance(r *Rules, cur budget.Counters, period budget.Period) (policy.Allowance, bool) {
	if h == nil || h.rules != r || h.counters != cur || h.period != period {
		return policy.Allowance{}, false
	}
	if h.start != nil {
		h.start()
	}
	<-h.done
	return h.al, h.err == nil
}

// Kept is what of a part may reach the agent: all of it, a text's first
// tokens (Text, cut between two of its pieces), or nothing (Dropped).
type Kept struct {
	Text    string
	Tokens  int64
	Cut     bool
	Dropped bool
}

// Settlement is what an output was charged and what of it may reach the
// agent.
type Settlement struct {
	Charge
	// Parts are the output's parts as they may reach the agent.
	Parts []Kept
	// Wanted is what the whole output would have cost in tokens;
	// Withheld, the tokens cut or dropped to fit the budget.
	Wanted, Withheld int64
}

// Settle charges an output before it reaches the agent: the tokens of
// every part, up to what the session (and its agent) may still spend
// (the policy's allowance), and the cost of the arguments and of the
// tokens kept. Parts past the allowance are cut (text) or dropped (the
// rest), in order. The charge is a compare-and-swap on the counters the
// allowance was worked out on, so concurrent settlements of one session
// or agent never take more than is left together.
func (g *Governor) Settle(ctx context.Context, out Output) (Settlement, error) {
	k := out.Session
	if k.Session == "" {
		return Settlement{}, errors.New("settle: a session id is required")
	}
	r := g.rules.Load()
	period := g.period(r, k.Agent)
	in, err := g.tokens.Count(out.Arguments)
	if err != nil {
		return Settlement{}, err
	}
	counts := make([]int64, len(out.Parts))
	var total int64
	for i, p := range out.Parts {
		if p.Binary {
			counts[i] = max(p.Tokens, 0)
		} else if counts[i], err = g.tokens.Count(p.Text); err != nil {
			return Settlement{}, err
		} else {
			if p.Whole {
				counts[i] = max(counts[i], p.Tokens)
			}
			counts[i] += max(p.Beside, 0)
		}
		total += counts[i]
	}
	var cur budget.Counters
	if out.Counters != nil && out.Counters.Role != "" {
		cur = *out.Counters
	} else if cur, err = g.session(ctx, r, k, out.Role, period); err != nil {
		return Settlement{}, err
	}
	for range maxAttempts {
		grant, _, err := g.grant(ctx, r, k, cur, period, out.Model, in, total, out.Headroom)
		if err != nil {
			return Settlement{}, err
		}
		kept, err := g.keep(out.Parts, counts, grant)
		if err != nil {
			return Settlement{}, err
		}
		grant = 0 // what is kept, which a cut between pieces may leave below the grant
		for _, p := range kept {
			grant += p.Tokens
		}
		cost, err := g.prices.Cost(out.Model, in, grant)
		if err != nil {
			return Settlement{}, err
		}
		next, ok, err := g.store.ChargeIf(ctx, k, period, cur, grant, cost)
		if err != nil {
			return Settlement{}, fmt.Errorf("ledger: %w", err)
		}
		if !ok {
			cur = next // another charge came first: work it out again
			if cur.Role == "" {
				if cur, err = g.session(ctx, r, k, out.Role, period); err != nil {
					return Settlement{}, err
				}
			}
			continue
		}
		g.observer.Charged(k.Agent, next.Role, contract.Usage{Tokens: grant, CostMicros: cost})
		s := Settlement{Wanted: total, Withheld: total - grant, Parts: kept,
			Charge: Charge{InputTokens: in, OutputTokens: grant, CostMicros: cost, Before: cur, After: next}}
		at := g.now()
		cross := func(ctx context.Context) string {
			g.logCharge(k, out.Tool, at, events.ChargeResult{DecisionID: out.DecisionID, Tokens: grant, CostMicros: cost,
				InputTokens: in, Withheld: total - grant}, next)
			levels, crossed := g.crossings(ctx, r, k, period, cur, next)
			if len(crossed) > 0 {
				red := g.redact(statusInput(k, next, period))
				for _, e := range crossed {
					g.emit(red, e)
				}
			}
			return levels.Signal
		}
		if out.Background {
			bg := context.WithoutCancel(ctx)
			g.pending.Go(func() { cross(bg) })
		} else {
			s.Signal = cross(ctx)
		}
		return s, nil
	}
	return Settlement{}, errors.New("ledger: could not charge: the counters kept changing")
}

// grant works out how many of total output tokens the session may take
// (its allowance, h's when it was worked out for cur) and what they cost
// with in input tokens: at most what the allowance of cost leaves, except
// that the arguments' own cost is spent whatever is left.
func (g *Governor) grant(ctx context.Context, r *Rules, k budget.Key, cur budget.Counters, period budget.Period, model string, in, total int64, h *Headroom) (grant, cost int64, err error) {
	al, ok := h.allowance(r, cur, period)
	if !ok {
		if al, err = r.Engine.Allowance(ctx, statusInput(k, cur, period)); err != nil {
			return 0, 0, err
		}
	}
	grant = total
	if al.Tokens != nil {
		grant = min(grant, *al.Tokens)
	}
	if cost, err = g.prices.Cost(model, in, grant); err != nil {
		return 0, 0, err
	}
	if al.Cost == nil || cost <= *al.Cost {
		return grant, cost, nil
	}
	// The most output tokens whose cost, with the arguments', fits.
	fits := sort.Search(int(grant)+1, func(n int) bool {
		c, err := g.prices.Cost(model, in, int64(n))
		return err != nil || c > *al.Cost
	}) - 1
	grant = int64(max(fits, 0))
	cost, err = g.prices.Cost(model, in, grant)
	return grant, cost, err
}

// keep lays grant tokens over the parts, in order: a text past them is cut
// between two of its pieces, anything else is dropped.
func (g *Governor) keep(parts []Part, counts []int64, grant int64) ([]Kept, error) {
	out := make([]Kept, len(parts))
	left := grant
	for i, p := range parts {
		switch {
		case counts[i] <= left:
			out[i] = Kept{Text: p.Text, Tokens: counts[i]}
			left -= counts[i]
		case p.Binary || p.Beside > 0 || p.Whole:
			out[i] = Kept{Dropped: true}
		default:
			text, n, err := g.tokens.Prefix(p.Text, left)
			if err != nil {
				return nil, err
			}
			out[i] = Kept{Text: text, Tokens: n, Cut: true, Dropped: text == ""}
			left -= n
		}
	}
	return out, nil
}

// ReleaseShell gives back the shell slot a call of tool took and never
// used: it failed before it reached its tool (the upstream was down, the
// route had gone). period is the period of the agent's budget the slot
// was taken in (Outcome.Period), to which it goes back: not the period
// of now, which may have begun since and never counted it.
func (g *Governor) ReleaseShell(ctx context.Context, k budget.Key, tool string, period budget.Period) error {
	before, err := g.store.Get(ctx, k, "")
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	after, err := g.store.ReleaseShell(ctx, k, period)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if before.Shell > 0 {
		g.logCharge(k, tool, g.now(), events.ChargeResult{Shell: -1}, after)
		g.observer.Charged(k.Agent, after.Role, contract.Usage{Shell: -1})
	}
	return nil
}
