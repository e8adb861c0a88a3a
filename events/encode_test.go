package events

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
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

// checkAppendInput fails unless marshalInput writes in as json.Marshal
// does, and appendInput declines only what it leaves to json.Marshal.
func checkAppendInput(t *testing.T, in contract.Input) {
	t.Helper()
	want, werr := json.Marshal(in)
	got, err := marshalInput(in)
	if (err == nil) != (werr == nil) || err == nil && !bytes.Equal(got, want) {
		t.Errorf("marshalInput: %s, %v; json.Marshal: %s, %v", got, err, want, werr)
	}
	if b, ok := appendInput(nil, &in); ok && (werr != nil || !bytes.Equal(b, want)) {
		t.Errorf("appendInput wrote %s; json.Marshal: %s, %v", b, want, werr)
	}
	for _, sp := range []string{"", "allow", "<\u2028\xff>"} {
		ci := CallInput{Input: in, ShellPolicy: sp}
		want, werr := json.Marshal(ci)
		got, err := marshalInput(ci)
		if (err == nil) != (werr == nil) || err == nil && !bytes.Equal(got, want) {
			t.Errorf("marshalInput of a CallInput: %s, %v; json.Marshal: %s, %v", got, err, want, werr)
		}
	}
}

// A call's input, as a decision logs it and as a charge does, is written
// by hand: a tenth of json.Marshal's allocations. (Were it not, nothing
// would be wrong but the time: this holds the speed the encoder is for.)
func TestMarshalInputWritesCallsByHand(t *testing.T) {
	in := contract.Input{Role: "coder", Tool: "ctx_read", Arguments: decoded(t, `{"path": "a.go", "n": 3}`, true), Session: "s", Agent: "a"}
	for _, v := range []any{in, CallInput{Input: in, ShellPolicy: "track"}} {
		if n := testing.AllocsPerRun(100, func() { marshalInput(v) }); n > 3 {
			t.Errorf("%T: %.0f allocations, as json.Marshal's", v, n)
		}
	}
}

// decoded is raw as a JSON decoder reads it, numbers as json.Number or
// as float64.
func decoded(t testing.TB, raw string, numbers bool) any {
	dec := json.NewDecoder(strings.NewReader(raw))
	if numbers {
		dec.UseNumber()
	}
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

func TestAppendInputIsMarshal(t *testing.T) {
	args := `{"path": "src/<main>.go", "n": 1.5e-7, "big": 1e21, "small": 0.000001, "neg": -0, "int": 12345678901234567890,
		"list": [true, false, null, "a\u2028b", {"z": 1, "a": [[]], "": {}}], "\u00e9": "caf\u00e9", "ctl": "\u0001\n\t"}`
	for _, tt := range []struct {
		name string
		in   contract.Input
	}{
		{"empty", contract.Input{}},
		{"a call", contract.Input{Role: "coder", Tool: "ctx_read", Upstream: "lean", UpstreamTool: "ctx_read",
			Arguments: decoded(t, args, true), Budget: contract.Usage{Tokens: 1200, Shell: 3, CostMicros: -4},
			Session: "s-1", Agent: "claude<code>", Project: "/home/u/p&q"}},
		{"numbers as floats", contract.Input{Arguments: decoded(t, args, false)}},
		{"an agent budget", contract.Input{AgentBudget: &contract.Usage{Tokens: 1, Shell: 2, CostMicros: 3}}},
		{"paths resolved", contract.Input{Tool: "ctx_edit", Arguments: map[string]any{"path": "a", "dest": "b"},
			Resolved: map[string][]string{"a": {"/home/u/.lean-ctx/a"}, "b": nil}}},
		{"arguments not an object", contract.Input{Arguments: []any{"x", json.Number("2")}}},
		{"an empty number", contract.Input{Arguments: map[string]any{"n": json.Number("")}}},
		{"an invalid number", contract.Input{Arguments: map[string]any{"n": json.Number("01")}}},
		{"NaN", contract.Input{Arguments: map[string]any{"n": math.NaN()}}},
		{"infinity", contract.Input{Arguments: []any{math.Inf(-1)}}},
		{"floats at the exponent's edges", contract.Input{Arguments: []any{1e-6, 9.99999e-7, 1e20, 1e21, -1e-7, 5e-324, math.MaxFloat64, 123456789.125, 0.1}}},
		{"integers", contract.Input{Arguments: map[string]any{"i": 7, "j": int64(-9)}}},
		{"nil containers", contract.Input{Arguments: map[string]any{"m": map[string]any(nil), "l": []any(nil)}}},
		{"another type", contract.Input{Arguments: map[string]any{"s": []string{"x"}, "u": uint8(3)}}},
		{"invalid UTF-8 in a key", contract.Input{Arguments: map[string]any{"\xff": "\xfe"}}},
		{"nested past the bound", contract.Input{Arguments: decoded(t, strings.Repeat("[", maxDepth+5)+strings.Repeat("]", maxDepth+5), true)}},
		{"nested to the bound", contract.Input{Arguments: decoded(t, strings.Repeat(`{"a":`, maxDepth-1)+"1"+strings.Repeat("}", maxDepth-1), true)}},
	} {
		t.Run(tt.name, func(t *testing.T) { checkAppendInput(t, tt.in) })
	}
	if _, ok := appendInput(nil, &contract.Input{Arguments: decoded(t, args, true)}); !ok {
		t.Error("appendInput left decoded arguments to json.Marshal")
	}
}

// Arguments of any JSON, and fields of any bytes.
func FuzzAppendInput(f *testing.F) {
	f.Add(`{"command": "git push --force", "n": [1, 2.5, -3e-9, {"x": null}]}`, "coder", "ctx_shell", int64(5), true)
	f.Add(`[1e400, "\u2029", 0.0000001, 100000000000000000000000]`, "\xff<", "&", int64(-1), false)
	f.Fuzz(func(t *testing.T, args, role, tool string, n int64, numbers bool) {
		dec := json.NewDecoder(strings.NewReader(args))
		if numbers {
			dec.UseNumber()
		}
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		in := contract.Input{Role: role, Tool: tool, UpstreamTool: tool, Arguments: v, Budget: contract.Usage{Tokens: n, Shell: -n, CostMicros: n / 3},
			Session: role + tool, Agent: tool, Project: role}
		if n%2 == 0 {
			in.AgentBudget = &contract.Usage{Tokens: n}
		}
		checkAppendInput(t, in)
	})
}

// BenchmarkDecisionInput measures a call's input as its log line holds it:
// appendInput against json.Marshal, the reference, in one run.
func BenchmarkDecisionInput(b *testing.B) {
	in := contract.Input{Role: "coder", Tool: "ctx_read", Upstream: "lean", UpstreamTool: "ctx_read",
		Arguments: decoded(b, `{"path": "src/main.go", "start": 10, "lines": 200, "mode": "full"}`, true),
		Budget:    contract.Usage{Tokens: 1200, Shell: 3, CostMicros: 4500}, Session: "s-1", Agent: "claude-code", Project: "/home/dev/project"}
	for _, tt := range []struct {
		name string
		f    func(any) ([]byte, error)
	}{{"appendInput", marshalInput}, {"json.Marshal", json.Marshal}} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tt.f(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
