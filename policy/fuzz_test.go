package policy

import (
	"context"
	"testing"

	"github.com/agentharness/harness/contract"
)

// FuzzDecide throws arbitrary calls at the engine. Properties: it never
// fails or panics; a deny always has reasons; a role with an allow list
// never allows a tool outside it (exempt tools aside); a denied pattern is
// never allowed; no call is allowed with a budget past its block threshold.
func FuzzDecide(f *testing.F) {
	e := testEngine(f)
	doc := e.Document()
	names := []string{"coder", "reviewer", "ops", "admin", "debugger", "ctx-only", "deny-all", "no-shell", "zero-shell", "nobody"}
	f.Add(uint8(1), "ctx_edit", int64(0), int64(0), int64(0))
	f.Add(uint8(2), "ctx_shell", int64(99), int64(300), int64(3000000))
	f.Add(uint8(5), "ctx_", int64(-1), int64(1<<40), int64(0))
	f.Fuzz(func(t *testing.T, roleIndex uint8, tool string, tokens, shell, cost int64) {
		in := contract.Input{Role: names[int(roleIndex)%len(names)], Tool: tool, Budget: contract.Usage{Tokens: tokens, Shell: shell, CostMicros: cost}}
		d, err := e.Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Decision != contract.Allow && d.Decision != contract.Warn && d.Decision != contract.Deny {
			t.Fatalf("decision %q", d.Decision)
		}
		if d.Decision == contract.Deny && len(d.Reasons) == 0 {
			t.Fatal("a deny without reasons")
		}
		if !d.Allowed {
			return
		}
		if tool == "" {
			t.Fatal("an empty tool name was allowed")
		}
		r, ok := doc.Roles[in.Role]
		if !ok {
			t.Fatalf("allowed for an unknown role: %+v", d)
		}
		if doc.Config.ExemptTools[tool] {
			return
		}
		if !r.Allowed.Match(tool) {
			t.Fatalf("%s allowed %q, outside its allow list %v", in.Role, tool, r.Allowed.Patterns)
		}
		if r.Denied.Match(tool) {
			t.Fatalf("%s allowed %q, which it denies", in.Role, tool)
		}
		if tokens < 0 || shell < 0 || cost < 0 {
			t.Fatalf("allowed with negative usage: %+v", in)
		}
		for dim, used := range map[string]int64{"tokens": tokens, "shell": shell, "cost": cost} {
			if at := r.Thresholds[dim].ExhaustedAt; at != nil && used >= *at {
				t.Fatalf("%s allowed with %s %d past its block threshold %d", in.Role, dim, used, *at)
			}
		}
		if doc.Config.ShellTools[tool] && r.Thresholds["shell"].Admits != nil && shell+1 > *r.Thresholds["shell"].Admits {
			t.Fatalf("shell call %d allowed past the %d admitted", shell+1, *r.Thresholds["shell"].Admits)
		}
	})
}
