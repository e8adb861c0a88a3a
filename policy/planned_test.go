package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/policy/plan"
)

// The decision is evaluated from its plan for the built-in policy alone,
// with each example policy, and with the benchmark's: none of them falls
// back to topdown unnoticed. A policy the plan cannot run (here one that
// reads the clock) is decided by topdown, with the same decisions.
func TestDecisionIsPlanned(t *testing.T) {
	examples, err := filepath.Glob("../examples/policies/*.rego")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no example policies: %v", err)
	}
	cases := map[string][]compiler.Module{"built-ins": nil, "bench": {{Name: "bench.rego", Source: []byte(benchPolicy)}}}
	for _, path := range examples {
		if strings.HasSuffix(path, "_test.rego") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cases[filepath.Base(path)] = []compiler.Module{{Name: filepath.Base(path), Source: src}}
	}
	doc := compiler.Compile(testSet(t), compiler.DefaultConfig())
	for name, mods := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := New(context.Background(), doc, mods...)
			if err != nil {
				t.Fatal(err)
			}
			if p, err := e.cur.Load().waitPlan(Query); p == nil || err != nil {
				t.Fatalf("no plan: %v", err)
			}
		})
	}
	// A policy with a with on the input is planned; one with a built-in
	// that is not a function of its arguments, or a with on data, is
	// refused, and decided by topdown. All decide as topdown does.
	for _, p := range []struct {
		name, src string
		planned   bool
	}{
		{"with", "package harness.custom.w\n\nshadow := input.tool\n\ndeny contains \"with\" if {\n\t\"x\" == shadow with input.tool as \"x\"\n\tinput.tool == \"ctx_edit\"\n}\n", true},
		{"time", "package harness.custom.w\n\ndeny contains \"now\" if {\n\ttime.now_ns() > 0\n\tinput.tool == \"ctx_edit\"\n}\n", false},
		// Topdown lays the value over the roles (the coder keeps its
		// other fields); a plan that replaced the coder allowed the edit.
		{"with on data", "package harness.custom.w\n\ndeny contains \"coder overridden\" if {\n\tr := data.harness.roles with data.harness.roles.coder as {\"note\": \"override\"}\n\tcount(r.coder) > 1\n\tinput.tool == \"ctx_edit\"\n}\n", false},
	} {
		t.Run(p.name, func(t *testing.T) {
			e, err := New(context.Background(), doc, compiler.Module{Name: "w.rego", Source: []byte(p.src)})
			if err != nil {
				t.Fatal(err)
			}
			relaxed(e)
			switch prog, err := e.cur.Load().waitPlan(Query); {
			case p.planned && (prog == nil || err != nil):
				t.Fatalf("no plan: %v", err)
			case !p.planned && (prog != nil || !errors.Is(err, plan.ErrUnsupported)):
				t.Fatalf("plan %v, %v: want ErrUnsupported", prog, err)
			}
			for _, tool := range []string{"ctx_edit", "ctx_read"} {
				in := contract.Input{Role: "coder", Tool: tool, Session: "s", Agent: "a"}
				got, err1 := e.Decide(context.Background(), in)
				want, err2 := e.decideTopdown(context.Background(), in)
				if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: %+v %v, topdown %+v %v", tool, got, err1, want, err2)
				}
				if denied := got.Decision == contract.Deny; denied != (tool == "ctx_edit") {
					t.Errorf("%s: %s %+v", tool, got.Decision, got.Reasons)
				}
			}
		})
	}
}

// An agent's deeply nested arguments are more than the plan holds (the
// harness's rules walk the arguments): the plan gives up, and the call is
// decided by topdown, as before the plan.
func TestDeepArgumentsAreDecidedByTopdown(t *testing.T) {
	e := testEngine(t)
	l := e.cur.Load()
	p, err := l.waitPlan(Query)
	if err != nil {
		t.Fatal(err)
	}
	var args any = "x"
	for range 1000 {
		args = map[string]any{"a": []any{args}}
	}
	in := contract.Input{Role: "coder", Tool: "ctx_edit", Session: "s", Agent: "a", Arguments: args.(map[string]any)}
	value, err := inputValue(in, l.shellPolicy(in.Role))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := p.Eval(context.Background(), value, plan.Options{}); !errors.Is(err, plan.ErrTooLarge) {
		t.Fatalf("the plan gave %v, %v: want ErrTooLarge", v, err)
	}
	got, err1 := e.Decide(context.Background(), in)
	want, err2 := e.decideTopdown(context.Background(), in)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v %v, topdown %+v %v", got, err1, want, err2)
	}
	if got.Decision != contract.Allow {
		t.Errorf("%s %+v", got.Decision, got.Reasons)
	}
}

// The plan is compiled in the background while other entry points are
// prepared on the same compiler, which OPA's rego.New writes to: under
// the race detector, this failed before preparing was serialised.
func TestPlanningBesideOtherQueries(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	done := make(chan error, 3)
	// The second call of an entry point starts its planning.
	go func() {
		for range 2 {
			if _, err := e.Decide(ctx, contract.Input{Role: "coder", Tool: "ctx_read", Session: "s", Agent: "a"}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		for range 2 {
			if _, err := e.Visible(ctx, "coder", []contract.Tool{{Name: "ctx_read"}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		for range 2 {
			if _, err := e.Switch(ctx, contract.SwitchInput{From: "coder", To: "reviewer", By: "agent"}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{Query, VisibleQuery, SwitchQuery} {
		if p, err := e.cur.Load().waitPlan(q); p == nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
