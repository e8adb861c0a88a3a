package govern

import (
	"context"
	"fmt"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/transcript"
)

// usage charges session k, whose agent records its model usage in the
// transcript at path, tokens (a tool's output; 0 for none) and, of cost,
// what the larger of its two sources grew by: the estimate of its tool
// calls (est: this call's) and the usage its transcript records at the
// models' prices (with cache writes and reads; what is new in it since the
// last read). So the estimate is not charged on top of the real usage, nor
// the real usage on top of the estimate, and what the agent writes into
// its transcript can only raise a session's charge, never lower it below
// the estimate. A transcript that may not be read (outside the home, not a
// regular file) is said once (OnError); its session is charged the
// estimate.
func (g *Governor) usage(ctx context.Context, r *Rules, k budget.Key, role, tool, path string, tokens, est int64, note events.ChargeResult) (Charge, error) {
	var ch Charge
	var chargeErr error
	ran := false
	tally, err := g.book.Update(k.String(), path, func(reqs []transcript.Request, t *transcript.Tally) error {
		ran = true
		var real int64
		for _, q := range reqs {
			p := g.price(q.Model)
			now, err := p.Of(q.Now)
			if err != nil {
				continue // counts no price can take are no request's
			}
			prev, err := p.Of(q.Prev)
			if err == nil && now > prev {
				real += now - prev
			}
		}
		// A tally above what the ledger holds is brought down to it: the
		// operator reset the session's budget (or the book was tampered
		// with), and charging resumes from there.
		c, err := g.store.Get(ctx, k, "")
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		if t.Charged() > c.CostMicros {
			t.EstimateMicros, t.RealMicros = min(t.EstimateMicros, c.CostMicros), min(t.RealMicros, c.CostMicros)
		}
		cost := max(t.EstimateMicros+est, t.RealMicros+real) - t.Charged()
		if tokens != 0 || cost != 0 {
			if ch, chargeErr = g.charge(ctx, r, k, role, tool, tokens, cost, note); chargeErr != nil {
				return chargeErr
			}
		}
		t.EstimateMicros += est
		t.RealMicros += real
		return nil
	})
	switch {
	case !ran:
		// The book could not be used: charge the estimate, as for an
		// agent that records nothing.
		g.onError(fmt.Errorf("transcript of session %s: %w", k, err))
		return g.charge(ctx, r, k, role, tool, tokens, est, note)
	case chargeErr != nil:
		return Charge{}, chargeErr
	case err != nil:
		if _, told := g.unread.LoadOrStore(path, true); !told {
			g.onError(fmt.Errorf("transcript of session %s: %w; its cost is the estimate of its tool calls", k, err))
		}
	}
	ch.Source = tally.Source()
	return ch, nil
}

// CostSource is the tally of session k's cost: what its agent's transcript
// and the estimate of its tool calls came to; ok is false for a session
// whose agent records no usage the harness read.
func (g *Governor) CostSource(k budget.Key) (t transcript.Tally, ok bool, err error) {
	if g.book == nil {
		return transcript.Tally{}, false, nil
	}
	return g.book.Tally(k.String())
}
