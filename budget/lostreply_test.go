package budget

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentharness/harness/internal/testredis"
)

// A script whose reply is lost (Redis died, the network failed) may have
// run. Sent again, it would run twice, or, being a compare-and-swap, find
// its own change and report that another came first, so that its caller
// makes it again: a charge or a shell slot taken twice. A lost reply is an
// error; the change is made at most once.
func TestRedisLostReplyChangesOnce(t *testing.T) {
	ctx := context.Background()
	p := testredis.NewLossyProxy(t, testredis.URL(t))
	r, err := OpenRedis(ctx, p.URL, Options{Prefix: fmt.Sprintf("lost:%d:", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	k := Key{Agent: "a", Session: "s"}
	if _, err := r.InitRole(ctx, k, "coder"); err != nil {
		t.Fatal(err)
	}
	for i, op := range []struct {
		name   string
		script string
		do     func(cur Counters) (bool, error)
		want   Usage
	}{
		{"ChargeIf", scriptChargeIf.Hash(), func(cur Counters) (bool, error) {
			_, ok, err := r.ChargeIf(ctx, k, "", cur, 100, 1000)
			return ok, err
		}, Usage{Tokens: 100, CostMicros: 1000}},
		{"Charge", scriptCharge.Hash(), func(Counters) (bool, error) { _, err := r.Charge(ctx, k, "", 100, 1000); return true, err }, Usage{Tokens: 100, CostMicros: 1000}},
		{"ReserveShell", scriptReserve.Hash(), func(cur Counters) (bool, error) {
			_, ok, err := r.ReserveShell(ctx, k, "", cur)
			return ok, err
		}, Usage{Shell: 1}},
		{"AddShell", scriptAddShell.Hash(), func(Counters) (bool, error) { _, err := r.AddShell(ctx, k, ""); return true, err }, Usage{Shell: 1}},
	} {
		if _, err := op.do(mustGet(t, r, k)); err != nil { // the server has the script now: it runs at once
			t.Fatal(err)
		}
		before := mustGet(t, r, k)
		p.LoseReplyTo(op.script)
		ok, err := op.do(before)
		if p.Lost() != i+1 {
			t.Fatalf("%s: the proxy lost no reply", op.name)
		}
		after := mustGet(t, r, k)
		got := Usage{Tokens: after.Tokens - before.Tokens, Shell: after.Shell - before.Shell, CostMicros: after.CostMicros - before.CostMicros}
		switch {
		case got != op.want:
			t.Errorf("%s, its reply lost: the counters moved by %+v; the change is %+v, made once", op.name, got, op.want)
		case err == nil && !ok:
			t.Errorf("%s, its reply lost: it reports that another change came first, but the change is its own: its caller will make it again", op.name)
		}
	}
}

func mustGet(t *testing.T, r *Redis, k Key) Counters {
	t.Helper()
	c, err := r.Get(context.Background(), k, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}
