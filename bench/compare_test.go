package main

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/cedar-policy/cedar-go"

	"github.com/agentharness/harness/contract"
)

// The Cedar policies decide as the harness does, allowed or not, over a
// grid of roles, tools and usage around each role's thresholds: what makes
// the comparison one of equivalent policies. Calls a role asks a person
// about are left out (Cedar's policies have no ask).
func TestCedarAgrees(t *testing.T) {
	doc, err := document()
	if err != nil {
		t.Fatal(err)
	}
	e, err := harness(doc)
	if err != nil {
		t.Fatal(err)
	}
	all, err := cedar.NewPolicySetFromBytes("harness.cedar", []byte(cedarPolicies(doc)))
	if err != nil {
		t.Fatal(err)
	}
	tools := []contract.Tool{{Name: "ctx_read"}, {Name: "ctx_edit"}, {Name: "ctx_shell"}, {Name: "ctx_session"}, {Name: "ctx_execute"},
		{Name: "mcp__server7__query"}, {Name: "tool_3_x"}, {Name: "a_view"}, {Name: "danger_4"}, {Name: "prompt:review"},
		{Name: "lean__ctx_shell", Upstream: "lean", UpstreamTool: "ctx_shell"}, {Name: "ctx_session", Upstream: "lean", UpstreamTool: "ctx_session"},
		{Name: "gh__ctx_edit", Upstream: "gh", UpstreamTool: "ctx_edit"}}
	commands := []string{"go test ./...", "git push origin main --force"}
	checked := map[bool]int{}
	for _, role := range slices.Sorted(maps.Keys(doc.Roles)) {
		r := doc.Roles[role]
		one, err := cedar.NewPolicySetFromBytes(role+".cedar", []byte(cedarPolicies(doc, role)))
		if err != nil {
			t.Fatal(err)
		}
		var usages []contract.Usage
		for _, dim := range []string{"tokens", "shell", "cost"} {
			th := r.Thresholds[dim]
			for _, p := range []*int64{th.ExhaustedAt, th.Admits} {
				if p == nil {
					continue
				}
				for _, n := range []int64{*p - 1, *p} {
					if n < 0 {
						continue
					}
					u := contract.Usage{}
					switch dim {
					case "tokens":
						u.Tokens = n
					case "shell":
						u.Shell = n
					default:
						u.CostMicros = n
					}
					usages = append(usages, u)
				}
			}
		}
		for _, tool := range tools {
			for _, u := range append(usages, contract.Usage{}) {
				for _, cmd := range commands {
					in := contract.Input{Role: role, Tool: tool.Name, Upstream: tool.Upstream, UpstreamTool: tool.UpstreamTool,
						Budget: u, Session: "s", Agent: "bench", Arguments: map[string]any{"command": cmd}}
					d, err := e.Decide(context.Background(), in)
					if err != nil {
						t.Fatal(err)
					}
					if d.Decision == contract.Ask {
						continue
					}
					req := cedarRequest(in)
					got, diag := all.IsAuthorized(cedar.EntityMap{}, req)
					byRole, _ := one.IsAuthorized(cedar.EntityMap{}, req)
					if bool(got) != d.Allowed || bool(byRole) != d.Allowed || len(diag.Errors) > 0 {
						t.Errorf("%+v: the harness %s %v, cedar-go %v (the role's set %v) %v", in, d.Decision, d.Reasons, got, byRole, diag)
					}
					checked[d.Allowed]++
				}
			}
		}
	}
	t.Logf("%d allowed and %d refused calls agree", checked[true], checked[false])
	if checked[true] < 100 || checked[false] < 100 {
		t.Errorf("the grid tests too few of one side: %v", checked)
	}
}
