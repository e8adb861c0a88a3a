package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/race"
)

// costly are policies a project (which an agent can write) might hold to
// stall a decision or exhaust the harness's memory. Unbounded, the first
// takes minutes, the second 75 s and 12 GB, the third 18 s and 2.3 GB, the
// fourth 33 s; each is a deny well within the deadline now.
var costly = []struct{ name, src string }{
	{"nested ranges", `deny contains "x" if {
	some i in numbers.range(1, 100000)
	some j in numbers.range(1, 100000)
	i == j + 100001
}`},
	{"a large range", `deny contains "x" if count(numbers.range(1, 100000000)) == 1`},
	{"a large network", `deny contains "x" if count(net.cidr_expand("10.0.0.0/8")) == 1`},
	{"a large comprehension", `xs := [x | some x in split(sprintf("%07000d", [0]), "")]

deny contains "x" if count([1 | some a in xs; some b in xs; a != b]) == 1`},
}

func TestCostlyPoliciesAreDenied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range costly {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := boundedEngine(t, "package harness.custom.slow\n\n"+tt.src+"\n")
			e.SetBounds(Bounds{Timeout: 100 * time.Millisecond})
			// The first decision is topdown's, watched by a timer; once
			// the plan is ready, the plan's, watched as it goes (check).
			for _, by := range []string{"topdown", "plan"} {
				if by == "plan" {
					if _, err := e.cur.Load().waitPlan(Query); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				d, err := e.Decide(ctx, contract.Input{Role: "coder", Tool: "ctx_read", Session: by})
				elapsed := time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed || len(d.Reasons) != 1 || d.Reasons[0].Code != contract.CodeEvalError ||
					!strings.Contains(d.Reasons[0].Message, "it ran past its deadline of 100ms ([policy] timeout)") {
					t.Errorf("by %s: %+v", by, d)
				}
				// A generous bound: what matters is that it stops at all
				// (each of these runs for tens of seconds unbounded).
				if elapsed > 5*time.Second {
					t.Errorf("by %s: the deny took %v", by, elapsed)
				}
			}
		})
	}
}

// An evaluation that grows the heap past the bound is stopped before its
// deadline.
func TestMemoryBound(t *testing.T) {
	e := boundedEngine(t, `package harness.custom.hungry

deny contains "x" if count(concat("", [sprintf("%0100000d", [i]) | some i in numbers.range(1, 200000)])) == 1
`)
	e.SetBounds(Bounds{Timeout: 30 * time.Second, Memory: 64 << 20})
	for _, by := range []string{"topdown", "plan"} { // as in TestCostlyPoliciesAreDenied
		if by == "plan" {
			if _, err := e.cur.Load().waitPlan(Query); err != nil {
				t.Fatal(err)
			}
		}
		d, err := e.Decide(context.Background(), contract.Input{Role: "coder", Tool: "ctx_read", Session: by})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed || d.Reasons[0].Code != contract.CodeEvalError || !strings.Contains(d.Reasons[0].Message, "it grew the heap by more than 64 MiB") {
			t.Errorf("by %s: %+v", by, d)
		}
	}
}

// A policy's messages are capped in number and length, so its answer (and
// the log entry of it) stays small however many it makes.
func TestFloodOfMessages(t *testing.T) {
	t.Parallel()
	n := race.Size(30000, 10) // 3,000 refusals under the race detector
	e := boundedEngine(t, fmt.Sprintf(`package harness.custom.flood

deny contains sprintf("refusal %%06d", [i]) if some i, _ in split(sprintf("%%0%dd", [0]), "")

deny contains sprintf("a long refusal %%d %%s", [i, sprintf("%%02000d", [0])]) if some i in [1, 2, 3]
`, n))
	e.SetBounds(Bounds{Timeout: time.Minute})
	d, err := e.Decide(context.Background(), contract.Input{Role: "coder", Tool: "ctx_read"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d)
	if d.Allowed || len(d.Reasons) != 20 || len(b) > 32<<10 || d.Reasons[19].Message != fmt.Sprintf("… and %d more refusals of custom policies", n+3-19) {
		t.Fatalf("%d reasons, %d bytes: %.300s", len(d.Reasons), len(b), b)
	}
	for i, r := range d.Reasons[:19] {
		long := i < 3
		if long != strings.HasSuffix(r.Message, "… (cut)") || long && len([]rune(r.Message)) != 1024+len([]rune("… (cut)")) {
			t.Errorf("message %d of %d characters: %.80s", i, len([]rune(r.Message)), r.Message)
		}
	}
}

func boundedEngine(t *testing.T, src string) *Engine {
	t.Helper()
	e, err := customEngine(t, compiler.Module{Name: "p.rego", Source: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A status, the levels and a listing run none of the custom policies: a
// deadline set for slow policies does not cut them short, so a busy
// machine loses no budget crossing to it.
func TestViewsOutlastTheDeadline(t *testing.T) {
	t.Parallel()
	e := boundedEngine(t, "package harness.custom.slow\n\n"+costly[0].src+"\n")
	e.SetBounds(Bounds{Timeout: time.Nanosecond})
	ctx := context.Background()
	if d, _ := e.Decide(ctx, contract.Input{Role: "coder", Tool: "ctx_read"}); d.Allowed {
		t.Errorf("a decision past a deadline of 1ns: %+v", d)
	}
	if st, err := e.Status(ctx, contract.Input{Role: "coder", Budget: contract.Usage{Tokens: 170000}}); err != nil || st.Signal != contract.LevelWarning {
		t.Errorf("status: %+v %v", st, err)
	}
	if ls, err := e.Levels(ctx, RoleUsage{Role: "coder"}); err != nil || !ls[0].Defined {
		t.Errorf("levels: %+v %v", ls, err)
	}
	if v, err := e.Visible(ctx, "coder", contract.Named("ctx_read")); err != nil || !v["ctx_read"] {
		t.Errorf("visible: %v %v", v, err)
	}
}

// A decision whose caller gives up while it runs is stopped, by topdown
// (the first evaluation) and by the plan: a deny that names the caller's
// reason, and the caller's error.
func TestDecisionEndsWithTheCallersContext(t *testing.T) {
	t.Parallel()
	e := boundedEngine(t, "package harness.custom.slow\n\n"+costly[0].src+"\n")
	e.SetBounds(Bounds{Timeout: time.Minute})
	for _, by := range []string{"topdown", "plan"} {
		if by == "plan" {
			if _, err := e.cur.Load().waitPlan(Query); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		d, err := e.Decide(ctx, contract.Input{Role: "coder", Tool: "ctx_read", Session: by})
		elapsed := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("by %s: %v, want the caller's error", by, err)
		}
		if d.Allowed || len(d.Reasons) != 1 || d.Reasons[0].Message != "policy evaluation stopped: context deadline exceeded" {
			t.Errorf("by %s: %+v", by, d)
		}
		if elapsed > 5*time.Second {
			t.Errorf("by %s: the deny took %v", by, elapsed)
		}
	}
}

// A bound ends once, for the first of its reasons: its deadline, its
// caller's context, the heap's growth; what watches it (its flag, its
// Cancel, the context it gives topdown, made before or after) sees the
// end; a bound stopped before its end does not end, and its context does.
func TestBoundEnds(t *testing.T) {
	t.Parallel()
	e := testEngine(t)
	for _, tt := range []struct {
		name       string
		bounds     Bounds
		cancel     bool // the caller's context ends
		ctxBefore  bool // topdown's context is asked for before the end
		wantMsg    string
		wantCaller bool // stopped returns the caller's error
	}{
		{"the deadline", Bounds{Timeout: 20 * time.Millisecond, Memory: DefaultMemory}, false, false, "policy evaluation stopped: it ran past its deadline of 20ms ([policy] timeout)", false},
		{"the deadline, a context made before", Bounds{Timeout: 20 * time.Millisecond, Memory: DefaultMemory}, false, true, "policy evaluation stopped: it ran past its deadline of 20ms ([policy] timeout)", false},
		{"the heap", Bounds{Timeout: time.Minute, Memory: 1}, false, false, "policy evaluation stopped: it grew the heap by more than 0 MiB", false},
		{"the caller", Bounds{Timeout: time.Minute, Memory: DefaultMemory}, true, false, "policy evaluation stopped: context canceled", true},
		{"the caller, a context made before", Bounds{Timeout: time.Minute, Memory: DefaultMemory}, true, true, "policy evaluation stopped: context canceled", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			b := e.boundedBy(parent, tt.bounds)
			defer b.stop()
			var ctx context.Context
			if tt.ctxBefore {
				ctx = b.context()
			}
			if tt.cancel {
				cancel()
			}
			var garbage [][]byte
			deadline := time.Now().Add(10 * time.Second)
			for !b.ended.Load() && time.Now().Before(deadline) {
				garbage = append(garbage, make([]byte, 1<<20)) // for the heap's bound
				time.Sleep(time.Millisecond)
			}
			_ = garbage
			if !b.over() || !b.ended.Load() {
				t.Fatal("the bound did not end")
			}
			if !b.cancel.Cancelled() {
				t.Error("the built-ins' Cancel was not cancelled")
			}
			if ctx == nil {
				ctx = b.context()
			}
			if ctx.Err() == nil {
				t.Error("topdown's context did not end")
			}
			msg, err := b.stopped()
			if msg != tt.wantMsg || (err != nil) != tt.wantCaller {
				t.Errorf("stopped: %q, %v; want %q", msg, err, tt.wantMsg)
			}
		})
	}
	t.Run("stopped before its end", func(t *testing.T) {
		t.Parallel()
		b := e.boundedBy(context.Background(), Bounds{Timeout: time.Minute, Memory: DefaultMemory})
		ctx := b.context()
		time.Sleep(2 * memoryWatchAfter) // its watch of the heap runs
		b.stop()
		if b.over() || b.ended.Load() {
			t.Error("a stopped bound ended")
		}
		if ctx.Err() == nil {
			t.Error("topdown's context outlived its bound")
		}
	})
}
