package budget

import (
	"context"
	"errors"
	"time"
)

// Ledger operations as Observed names them.
const (
	OpGet          = "get"
	OpInitRole     = "init_role"
	OpSetRole      = "set_role"
	OpSwitchRole   = "switch_role"
	OpPinProject   = "pin_project"
	OpReserveShell = "reserve_shell"
	OpAddShell     = "add_shell"
	OpCharge       = "charge"
	OpChargeIf     = "charge_if"
	OpReleaseShell = "release_shell"
	OpReset        = "reset"
	OpResetAgent   = "reset_agent"
	OpSessions     = "sessions"
)

// Ops are every operation Observed names.
var Ops = []string{OpGet, OpInitRole, OpSetRole, OpSwitchRole, OpPinProject, OpReserveShell, OpAddShell,
	OpCharge, OpChargeIf, OpReleaseShell, OpReset, OpResetAgent, OpSessions}

// Observed is store with every operation timed: observe hears each one's
// name (one of Ops), how long it took and its error. An operation on a
// session the store does not have (ErrNoSession) is an answer, not an
// error, and is reported with a nil error; so is a compare-and-swap that
// found the counters changed. Closing is not observed.
func Observed(store Store, observe func(op string, took time.Duration, err error)) Store {
	return &observed{s: store, observe: observe}
}

type observed struct {
	s       Store
	observe func(string, time.Duration, error)
}

func (o *observed) done(op string, start time.Time, err error) {
	if errors.Is(err, ErrNoSession) {
		err = nil
	}
	o.observe(op, time.Since(start), err)
}

func (o *observed) Get(ctx context.Context, k Key, period Period) (Counters, error) {
	start := time.Now()
	c, err := o.s.Get(ctx, k, period)
	o.done(OpGet, start, err)
	return c, err
}

func (o *observed) InitRole(ctx context.Context, k Key, role string) (Counters, error) {
	start := time.Now()
	c, err := o.s.InitRole(ctx, k, role)
	o.done(OpInitRole, start, err)
	return c, err
}

func (o *observed) SetRole(ctx context.Context, k Key, role string) (Counters, error) {
	start := time.Now()
	c, err := o.s.SetRole(ctx, k, role)
	o.done(OpSetRole, start, err)
	return c, err
}

func (o *observed) SwitchRole(ctx context.Context, k Key, from, to string) (Counters, bool, error) {
	start := time.Now()
	c, ok, err := o.s.SwitchRole(ctx, k, from, to)
	o.done(OpSwitchRole, start, err)
	return c, ok, err
}

func (o *observed) PinProject(ctx context.Context, k Key, project string) (Counters, error) {
	start := time.Now()
	c, err := o.s.PinProject(ctx, k, project)
	o.done(OpPinProject, start, err)
	return c, err
}

func (o *observed) ReserveShell(ctx context.Context, k Key, period Period, expected Counters) (Counters, bool, error) {
	start := time.Now()
	c, ok, err := o.s.ReserveShell(ctx, k, period, expected)
	o.done(OpReserveShell, start, err)
	return c, ok, err
}

func (o *observed) AddShell(ctx context.Context, k Key, period Period) (Counters, error) {
	start := time.Now()
	c, err := o.s.AddShell(ctx, k, period)
	o.done(OpAddShell, start, err)
	return c, err
}

func (o *observed) Charge(ctx context.Context, k Key, period Period, tokens, costMicros int64) (Counters, error) {
	start := time.Now()
	c, err := o.s.Charge(ctx, k, period, tokens, costMicros)
	o.done(OpCharge, start, err)
	return c, err
}

func (o *observed) ChargeIf(ctx context.Context, k Key, period Period, expected Counters, tokens, costMicros int64) (Counters, bool, error) {
	start := time.Now()
	c, ok, err := o.s.ChargeIf(ctx, k, period, expected, tokens, costMicros)
	o.done(OpChargeIf, start, err)
	return c, ok, err
}

func (o *observed) ReleaseShell(ctx context.Context, k Key, period Period) (Counters, error) {
	start := time.Now()
	c, err := o.s.ReleaseShell(ctx, k, period)
	o.done(OpReleaseShell, start, err)
	return c, err
}

func (o *observed) Reset(ctx context.Context, k Key) error {
	start := time.Now()
	err := o.s.Reset(ctx, k)
	o.done(OpReset, start, err)
	return err
}

func (o *observed) ResetAgent(ctx context.Context, agent string, period Period) error {
	start := time.Now()
	err := o.s.ResetAgent(ctx, agent, period)
	o.done(OpResetAgent, start, err)
	return err
}

func (o *observed) Sessions(ctx context.Context, session string) ([]Session, error) {
	start := time.Now()
	list, err := o.s.Sessions(ctx, session)
	o.done(OpSessions, start, err)
	return list, err
}

func (o *observed) Close() error { return o.s.Close() }
