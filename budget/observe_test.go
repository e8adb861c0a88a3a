package budget

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// Observed names each operation and passes its answer through; a session
// the store does not have is an answer, not an error, and a failure is
// reported as one.
func TestObserved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type heard struct {
		op  string
		err bool
	}
	var got []heard
	s := Observed(NewMemory(), func(op string, _ time.Duration, err error) { got = append(got, heard{op, err != nil}) })
	defer s.Close()
	k := Key{Session: "s", Agent: "a"}
	c, err := s.InitRole(ctx, k, "coder")
	if err != nil || c.Role != "coder" {
		t.Fatalf("init role: %+v %v", c, err)
	}
	s.Get(ctx, k, "")
	s.SetRole(ctx, k, "reviewer")
	s.SwitchRole(ctx, k, "reviewer", "coder")
	s.PinProject(ctx, k, "p")
	s.ReserveShell(ctx, k, "", c)
	s.AddShell(ctx, k, "")
	if c, _ = s.Charge(ctx, k, "", 10, 20); c.Tokens != 10 || c.CostMicros != 20 {
		t.Errorf("charge passed through as %+v", c)
	}
	s.ChargeIf(ctx, k, "", Counters{}, 1, 1)
	s.ReleaseShell(ctx, k, "")
	s.Reset(ctx, k)
	if err := s.Reset(ctx, Key{Session: "none"}); !errors.Is(err, ErrNoSession) {
		t.Errorf("reset of no session: %v", err)
	}
	s.ResetAgent(ctx, "a", "")
	s.Sessions(ctx, "")
	s.Reset(ctx, Key{}) // invalid: an error
	want := []heard{{OpInitRole, false}, {OpGet, false}, {OpSetRole, false}, {OpSwitchRole, false}, {OpPinProject, false},
		{OpReserveShell, false}, {OpAddShell, false}, {OpCharge, false}, {OpChargeIf, false}, {OpReleaseShell, false},
		{OpReset, false}, {OpReset, false}, {OpResetAgent, false}, {OpSessions, false}, {OpReset, true}}
	if !slices.Equal(got, want) {
		t.Errorf("heard\n %v\nwant\n %v", got, want)
	}
	var ops []string
	for _, h := range want {
		if !slices.Contains(ops, h.op) {
			ops = append(ops, h.op)
		}
	}
	if len(ops) != len(Ops) {
		t.Errorf("the test names %d operations of %d", len(ops), len(Ops))
	}
}
