package budget

import (
	"context"
	"errors"
)

// ErrReadOnly is the error of a change to a store opened read-only.
var ErrReadOnly = errors.New("the ledger is open for reading only")

// readOnly is a store that reads through to another and refuses every
// change.
type readOnly struct{ s Store }

func (r readOnly) Get(ctx context.Context, k Key, period Period) (Counters, error) {
	return r.s.Get(ctx, k, period)
}

func (r readOnly) Sessions(ctx context.Context, session string) ([]Session, error) {
	return r.s.Sessions(ctx, session)
}

func (r readOnly) Close() error { return r.s.Close() }

func (readOnly) InitRole(context.Context, Key, string) (Counters, error) {
	return Counters{}, ErrReadOnly
}

func (readOnly) SetRole(context.Context, Key, string) (Counters, error) {
	return Counters{}, ErrReadOnly
}

func (readOnly) SwitchRole(context.Context, Key, string, string) (Counters, bool, error) {
	return Counters{}, false, ErrReadOnly
}

func (readOnly) PinProject(context.Context, Key, string) (Counters, error) {
	return Counters{}, ErrReadOnly
}

func (readOnly) ReserveShell(context.Context, Key, Period, Counters) (Counters, bool, error) {
	return Counters{}, false, ErrReadOnly
}

func (readOnly) AddShell(context.Context, Key, Period) (Counters, error) {
	return Counters{}, ErrReadOnly
}

func (readOnly) Charge(context.Context, Key, Period, int64, int64) (Counters, error) {
	return Counters{}, ErrReadOnly
}

func (readOnly) Reset(context.Context, Key) error { return ErrReadOnly }

func (readOnly) ResetAgent(context.Context, string, Period) error { return ErrReadOnly }

func (readOnly) ChargeIf(context.Context, Key, Period, Counters, int64, int64) (Counters, bool, error) {
	return Counters{}, false, ErrReadOnly
}

func (readOnly) ReleaseShell(context.Context, Key, Period) (Counters, error) {
	return Counters{}, ErrReadOnly
}
