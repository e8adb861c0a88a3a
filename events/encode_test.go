package events

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentharness/harness/contract"
)

// mustMarshal is v's JSON, as Log's inputs and results are.
func mustMarshal(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkAppendEntry fails unless appendEntry writes e as json.Marshal
// does, or declines where json.Marshal fails.
func checkAppendEntry(t *testing.T, e Entry) {
	t.Helper()
	want, werr := json.Marshal(e)
	got, ok := appendEntry(nil, &e)
	switch {
	case !ok && werr == nil:
		t.Errorf("appendEntry declined an entry json.Marshal writes: %s", want)
	case ok && werr != nil:
		t.Errorf("appendEntry wrote an entry json.Marshal refuses (%v): %s", werr, got)
	case ok && !bytes.Equal(got, want):
		t.Errorf("appendEntry wrote\n%s\njson.Marshal\n%s", got, want)
	}
	if line, err := marshalEntry(&e); (err == nil) != (werr == nil) || err == nil && !bytes.Equal(line, want) {
		t.Errorf("marshalEntry: %s, %v; json.Marshal: %s, %v", line, err, want, werr)
	}
}

func TestAppendEntryIsMarshal(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 4, 5, 123456789, time.UTC)
	decision := contract.Decision{Decision: contract.Deny, Role: "coder", Tool: "ctx_<shell>",
		Reasons: []contract.Reason{{Code: "policy", Message: "no \"force\" & no <pushes>\u2028"}}}
	for _, tt := range []struct {
		name string
		e    Entry
	}{
		{"empty", Entry{}},
		{"a decision", Entry{DecisionID: "d-1", Path: PathDecision, Timestamp: at,
			Labels:  map[string]string{"id": "i", "version": "1.2.3", "harness_version": "dev", "client": "claude-code"},
			Bundles: map[string]BundleInfo{"harness": {Revision: "abc123"}},
			Input:   mustMarshal(t, map[string]any{"tool": "ctx_shell", "arguments": map[string]any{"command": "echo <a> & b\n"}}),
			Result:  mustMarshal(t, decision),
			Metrics: map[string]int64{"timer_rego_query_eval_ns": 21000, "a": -1},
			Erased:  []string{"/input/arguments/password"}, Masked: []string{"/result/tool", "/result/reasons/0/message"},
			Custom: &Custom{Shadow: true, CostSource: "transcript", ApprovedBy: "elicitation", Shell: 1}}},
		{"a charge", Entry{DecisionID: "c-1", Path: PathCharge, Timestamp: at, Result: mustMarshal(t, ChargeResult{Tokens: 12, CostMicros: 30})}},
		{"empty maps and lists", Entry{Labels: map[string]string{}, Bundles: map[string]BundleInfo{}, Metrics: map[string]int64{}, Erased: []string{}, Masked: []string{}, Custom: &Custom{}}},
		{"a bundle without a revision", Entry{Bundles: map[string]BundleInfo{"b": {}, "a": {Revision: "r"}}}},
		{"custom: each field alone", Entry{Custom: &Custom{CostSource: "estimate"}}},
		{"custom: shell alone", Entry{Custom: &Custom{Shell: -3}}},
		{"custom: approved alone", Entry{Custom: &Custom{ApprovedBy: "x"}}},
		{"strings JSON escapes", Entry{DecisionID: "\x00\x01\x08\x09\x0a\x0b\x0c\x0d\x1f\x7f\"\\/<>&'", Path: "\u2028\u2029\u2027\u202a"}},
		{"invalid UTF-8", Entry{DecisionID: "a\xffb\xc3(\xe2\x80\xa8\xe2\x80", Labels: map[string]string{"\xff": "\xed\xa0\x80"}}},
		{"non-ASCII", Entry{DecisionID: "café 日本 🙂", Erased: []string{"/input/ключ"}}},
		{"a time in another zone", Entry{Timestamp: at.In(time.FixedZone("east", 5*3600+30*60))}},
		{"a time with no fraction", Entry{Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
		{"a time of year 10000", Entry{Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"a time before year 0", Entry{Timestamp: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"a zone a day away", Entry{Timestamp: at.In(time.FixedZone("far", 24*3600))}},
		{"a zone just under a day away", Entry{Timestamp: at.In(time.FixedZone("far", -(23*3600 + 59*60)))}},
		{"a zone of seconds", Entry{Timestamp: at.In(time.FixedZone("odd", 3600+30))}},
	} {
		t.Run(tt.name, func(t *testing.T) { checkAppendEntry(t, tt.e) })
	}
}

// Every string field, and inputs and results as json.Marshal writes them,
// whatever their bytes.
func FuzzAppendEntry(f *testing.F) {
	f.Add("d-1", "harness/decision", "client", "claude<code>", "/input/a", "x\u2028y", int64(1), int64(1733220000), true)
	f.Add("\xff\x00", "\"\\", "\x7f", "&", "", "\xe2\x80", int64(-5), int64(-62135596800), false)
	f.Fuzz(func(t *testing.T, id, path, key, value, pointer, text string, n, unix int64, custom bool) {
		e := Entry{DecisionID: id, Path: path, Labels: map[string]string{key: value, value: key},
			Bundles: map[string]BundleInfo{key: {Revision: value}}, Metrics: map[string]int64{key: n, text: -n},
			Erased: []string{pointer}, Masked: []string{text, pointer},
			Input:     mustMarshal(t, map[string]any{"tool": value, "arguments": map[string]any{key: text}}),
			Result:    mustMarshal(t, contract.Decision{Tool: text, Reasons: []contract.Reason{{Message: value}}}),
			Timestamp: time.Unix(unix, n).UTC()}
		if custom {
			e.Custom = &Custom{Shadow: n%2 == 0, CostSource: text, ApprovedBy: value, Shell: n}
		}
		checkAppendEntry(t, e)
	})
}

// BenchmarkDecisionLine measures a decision's log line: its JSON, written
// by appendEntry, against json.Marshal, the reference, in one run.
func BenchmarkDecisionLine(b *testing.B) {
	e := Entry{DecisionID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", Path: PathDecision, Timestamp: time.Now().UTC(),
		Labels:  map[string]string{"id": "4f2a", "version": "1.9.0", "harness_version": "dev", "client": "claude-code"},
		Bundles: map[string]BundleInfo{"harness": {Revision: "3c9f0e2a"}},
		Input: mustMarshal(b, map[string]any{"tool": "ctx_read", "role": "coder", "session": "s-1", "agent": "claude-code",
			"arguments": map[string]any{"path": "src/main.go"}, "budget": map[string]any{"tokens": 1200, "shell": 3, "cost_micros": 4500}}),
		Result: mustMarshal(b, contract.Decision{Decision: contract.Allow, Allowed: true, Role: "coder", Tool: "ctx_read",
			Reasons: []contract.Reason{}, Warnings: []contract.Reason{}, Signal: "OK"}),
		Metrics: map[string]int64{"timer_rego_query_eval_ns": 21000}, Custom: &Custom{CostSource: "estimate"}}
	b.Run("appendEntry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalEntry(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
