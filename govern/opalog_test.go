package govern

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/plugins/logs"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy"
)

// The decision log is OPA's: each line decodes as OPA's own EventV1, and
// every field holds what was meant. Erased paths are rooted at /input and
// name the rule as written (OPA's masking records its rules, and has no
// wildcards), a value replaced in the result is listed in masked, the
// bundle's revision ties the decision to its policy, labels carry the
// installation's id and OPA's version, and what OPA's schema has no field
// for (shadow mode) is under custom. The input is what the policy saw:
// arguments {} when the call had none.
func TestDecisionLogIsOPAs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set := testroles.Set(t, map[string]string{"secret-tool": "[role]\ninherits = \"coder\"\n"})
	e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	labels := map[string]string{"id": "0193a5f0-0000-7000-8000-000000000001", "version": "1.22.4", "harness_version": "0.1.0", "app": "agent-harness"}
	for _, tt := range []struct {
		name   string
		masks  []string
		shadow bool
		call   Call
		erased []string
		masked []string
		input  func(map[string]any) // what the logged input holds, beside the call's fields
	}{
		{name: "no arguments", call: Call{Tool: "ctx_read"},
			input: func(in map[string]any) { in["arguments"] = map[string]any{} }},
		{name: "a masked argument", masks: []string{"/arguments/password"},
			call:   Call{Tool: "ctx_read", Arguments: map[string]any{"Password": "hunter2hunter2", "path": "a.go"}},
			erased: []string{"/input/arguments/password"},
			input:  func(in map[string]any) { in["arguments"] = map[string]any{"path": "a.go"} }},
		{name: "a wildcard, recorded as written", masks: []string{"/arguments/env/*"},
			call:   Call{Tool: "ctx_shell", Arguments: map[string]any{"env": map[string]any{"A": "1", "B": "2"}, "command": "ls"}},
			erased: []string{"/input/arguments/env/*"},
			input:  func(in map[string]any) { in["arguments"] = map[string]any{"env": map[string]any{}, "command": "ls"} }},
		{name: "a masked tool, replaced in the result", masks: []string{"/tool", "/arguments/none"},
			call:   Call{Tool: "secret-tool"},
			erased: []string{"/input/tool"}, masked: []string{"/result/tool"},
			input: func(in map[string]any) {
				delete(in, "tool")
				in["arguments"] = map[string]any{}
			}},
		{name: "shadow mode", shadow: true, call: Call{Tool: "ctx_edit", Role: "reviewer"},
			input: func(in map[string]any) { in["arguments"] = map[string]any{} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "decisions.jsonl")
			dl, err := events.OpenDecisionLog(path, events.DecisionLogOptions{Labels: labels})
			if err != nil {
				t.Fatal(err)
			}
			defer dl.Close()
			mask, err := events.NewMask(tt.masks)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			g := New(Options{Rules: Rules{Engine: e}, Store: budget.NewMemory(), Decisions: dl, Mask: mask, Shadow: tt.shadow,
				Now: func() time.Time { return now }, OnError: func(err error) { t.Error(err) }})
			call := tt.call
			call.Session = budget.Key{Agent: "claude-code", Session: "s-1"}
			o, err := g.Decide(ctx, call)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var ev logs.EventV1
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("not an EventV1: %v\n%s", err, raw)
			}
			// Nothing of ours lies outside OPA's schema.
			var fields map[string]json.RawMessage
			json.Unmarshal(raw, &fields)
			for k := range fields {
				if !slices.Contains([]string{"labels", "decision_id", "bundles", "path", "input", "result", "erased", "masked", "timestamp", "metrics", "custom"}, k) {
					t.Errorf("field %q is not one of EventV1's", k)
				}
			}
			if ev.DecisionID != o.DecisionID || ev.Path != "harness/decision" || !ev.Timestamp.Equal(now) {
				t.Errorf("decision_id %q path %q timestamp %v", ev.DecisionID, ev.Path, ev.Timestamp)
			}
			if !reflect.DeepEqual(ev.Labels, labels) {
				t.Errorf("labels %v, want %v", ev.Labels, labels)
			}
			if rev := e.Bundle().Revision; rev == "" || ev.Bundles["harness"].Revision != rev || len(ev.Bundles) != 1 {
				t.Errorf("bundles %v, want harness at revision %q", ev.Bundles, rev)
			}
			if !slices.Equal(ev.Erased, tt.erased) || !slices.Equal(ev.Masked, tt.masked) {
				t.Errorf("erased %q masked %q, want %q %q", ev.Erased, ev.Masked, tt.erased, tt.masked)
			}
			if _, ok := ev.Metrics["timer_rego_query_eval_ns"]; !ok {
				t.Errorf("metrics %v", ev.Metrics)
			}
			wantCustom := map[string]any(nil)
			if tt.shadow {
				wantCustom = map[string]any{"shadow": true}
			}
			if !reflect.DeepEqual(ev.Custom, wantCustom) {
				t.Errorf("custom %v, want %v", ev.Custom, wantCustom)
			}
			// The input, as the policy saw it.
			want := map[string]any{"role": o.Decision.Role, "tool": call.Tool, "upstream": "", "upstream_tool": "", "shell_policy": o.Decision.ShellPolicy,
				"budget":  map[string]any{"tokens": json.Number("0"), "shell": json.Number("0"), "cost_micros": json.Number("0")},
				"session": "s-1", "agent": "claude-code", "project": ""}
			tt.input(want)
			if ev.Input == nil || !reflect.DeepEqual(*ev.Input, any(want)) {
				t.Errorf("input %#v,\nwant  %#v", deref(ev.Input), want)
			}
			// The result, the decision, with what was masked replaced.
			var d contract.Decision
			b, _ := json.Marshal(deref(ev.Result))
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			wantD := o.Decision
			if slices.Contains(tt.masked, "/result/tool") {
				wantD.Tool = events.Masked
			}
			if !reflect.DeepEqual(normal(t, d), normal(t, wantD)) {
				t.Errorf("result %+v,\nwant   %+v", d, wantD)
			}
			if strings.Count(string(raw), "\n") != 1 {
				t.Errorf("%d lines", strings.Count(string(raw), "\n"))
			}
		})
	}
}

func deref(p *any) any {
	if p == nil {
		return nil
	}
	return *p
}

// normal is d as JSON decodes it, to compare decisions without regard to
// nil and empty lists.
func normal(t *testing.T, d contract.Decision) any {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal(b, &v)
	return v
}
