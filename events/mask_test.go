package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentharness/harness/contract"
)

func apply(t *testing.T, masks []string, input string) *Redaction {
	t.Helper()
	m, err := NewMask(masks)
	if err != nil {
		t.Fatal(err)
	}
	var in any
	dec := json.NewDecoder(strings.NewReader(input))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		t.Fatal(err)
	}
	r, err := m.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Masks match keys whatever their case; "*" matches every key; what they
// select is erased from the input and listed.
func TestMaskErases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		masks  []string
		input  string
		erased string
		want   string
	}{
		{"exact", []string{"/arguments/password"}, `{"arguments": {"password": "p", "x": 1}}`,
			"/input/arguments/password", `{"arguments":{"x":1}}`},
		{"any case of the key", []string{"/arguments/password"}, `{"arguments": {"Password": "a", "PASSWORD": "b", "passWord": "c", "pass": "d"}}`,
			"/input/arguments/password", `{"arguments":{"pass":"d"}}`},
		{"any case of the mask", []string{"/Arguments/PASSWORD"}, `{"arguments": {"password": "a"}}`,
			"/input/Arguments/PASSWORD", `{"arguments":{}}`},
		{"star", []string{"/arguments/env/*"}, `{"arguments": {"env": {"A": "1", "b": "2"}, "keep": true}}`,
			"/input/arguments/env/*", `{"arguments":{"env":{},"keep":true}}`},
		{"escaped pointer", []string{"/arguments/a~1b"}, `{"arguments": {"A/B": "x", "a~1b": "y"}}`,
			"/input/arguments/a~1b", `{"arguments":{"a~1b":"y"}}`},
		{"top-level fields", []string{"/tool", "/session"}, `{"tool": "t", "session": "s", "role": "coder"}`,
			"/input/session /input/tool", `{"role":"coder"}`},
		{"absent", []string{"/arguments/password"}, `{"arguments": "not an object"}`, "", `{"arguments":"not an object"}`},
		{"numbers stay exact", []string{"/x"}, `{"x": 1, "n": 12345678901234567890}`, "/input/x", `{"n":12345678901234567890}`},
		// An empty key is a key (RFC 6901): an agent's argument named ""
		// under a star is erased like any other, and does not stop the
		// process that logs it.
		{"star over an empty key", []string{"/arguments/env/*"}, `{"arguments": {"env": {"": "x", "A": "1"}}}`,
			"/input/arguments/env/*", `{"arguments":{"env":{}}}`},
		{"star over the arguments", []string{"/arguments/*"}, `{"arguments": {"": 1, "k": 2}}`,
			"/input/arguments/*", `{"arguments":{}}`},
		// Where a masked path argument leads is as much the operator's
		// to hide as the argument: its entry goes with it; the others stay.
		{"resolved path of a masked argument", []string{"/arguments/path"}, `{"arguments": {"path": "notes/x"}, "resolved": {"notes/x": ["/home/u/.lean-ctx/x"]}}`,
			"/input/arguments/path /input/resolved", `{"arguments":{}}`},
		{"resolved paths of masked arguments only", []string{"/arguments/files"}, `{"arguments": {"files": ["a", "b"], "path": "c"}, "resolved": {"a": ["/x/a"], "c": ["/x/c"]}}`,
			"/input/arguments/files /input/resolved", `{"arguments":{"path":"c"},"resolved":{"c":["/x/c"]}}`},
		{"resolved paths kept with another argument masked", []string{"/arguments/password"}, `{"arguments": {"password": "p", "path": "a"}, "resolved": {"a": ["/w/a"]}}`,
			"/input/arguments/password", `{"arguments":{"path":"a"},"resolved":{"a":["/w/a"]}}`},
		{"resolved paths kept with other fields", []string{"/session"}, `{"session": "s", "resolved": {"a": ["/b"]}}`,
			"/input/session", `{"resolved":{"a":["/b"]}}`},
		{"star, then a key", []string{"/arguments/*/token"}, `{"arguments": {"": {"token": "t", "x": 1}, "b": {"token": "u"}}}`,
			"/input/arguments/*/token", `{"arguments":{"":{"x":1},"b":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := apply(t, tt.masks, tt.input)
			in, err := r.Input()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.Erased(), " "); got != tt.erased {
				t.Errorf("erased %q, want %q", got, tt.erased)
			}
			if string(in) != tt.want {
				t.Errorf("input %s, want %s", in, tt.want)
			}
		})
	}
}

// Every occurrence of a masked value in a message becomes [masked]: the
// value as it is, as JSON or Go quote it, the strings and long numbers
// inside a masked object; short numbers, booleans and keys stay.
func TestMaskText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		text  string
		want  string
	}{
		{"quoted", `{"arguments": {"Password": "hunter2"}}`, "bad token hunter2, again hunter2", "bad token [masked], again [masked]"},
		{"as JSON quotes it", `{"arguments": {"password": "a\"b\\c<d"}}`, `got {"password": "a\"b\\c<d"} and a\"b\\c\u003cd and a"b\c<d`,
			`got {"password": "[masked]"} and [masked] and [masked]`},
		{"control characters", `{"arguments": {"password": "x\ny"}}`, `"x\ny" or x` + "\n" + `y`, `"[masked]" or [masked]`},
		{"overlapping values", `{"arguments": {"password": ["XYq", "qZW"]}}`, "aXYqZWb", "a[masked]b"},
		{"repeated in itself", `{"arguments": {"password": "aa"}}`, "aaa b", "[masked] b"},
		{"object leaves", `{"arguments": {"password": {"user": "alice", "pin": 123456, "ok": true, "n": 7}}}`,
			"alice 123456 true 7 user pin", "[masked] [masked] true 7 user pin"},
		{"nothing masked", `{"arguments": {"other": "hunter2"}}`, "hunter2", "hunter2"},
		{"empty value", `{"arguments": {"password": ""}}`, "text", "text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := apply(t, []string{"/arguments/password"}, tt.input)
			if got := r.Text(tt.text); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// The search is bounded: past it, a message is withheld, never written
// unsearched.
func TestMaskSearchBound(t *testing.T) {
	t.Parallel()
	r := apply(t, []string{"/arguments/password"}, `{"arguments": {"password": "secret"}}`)
	r.search.Store(100)
	if got := r.Text("a secret of fewer than a hundred bytes"); got != "a [masked] of fewer than a hundred bytes" {
		t.Errorf("short text: %q", got)
	}
	if got := r.Text(strings.Repeat("x", 200) + "secret"); got != Withheld {
		t.Errorf("past the bound: %q", got)
	}
}

// The result's messages are redacted, and the fields that carry a masked
// input field are masked.
func TestMaskResult(t *testing.T) {
	t.Parallel()
	d := contract.Decision{Decision: "deny", Role: "coder", Tool: "deploy", Signal: "OK",
		Reasons:  []contract.Reason{{Code: "policy", Message: "bad token hunter2 for deploy", Policy: "harness.custom.leak"}},
		Warnings: []contract.Reason{{Code: "policy", Message: "hunter2 seen"}}}
	tests := []struct {
		name  string
		masks []string
		want  string
	}{
		{"no mask", nil, `"reasons":[{"code":"policy","message":"bad token hunter2 for deploy","policy":"harness.custom.leak"}],"warnings":[{"code":"policy","message":"hunter2 seen"}]`},
		{"password", []string{"/arguments/password"}, `"reasons":[{"code":"policy","message":"bad token [masked] for deploy","policy":"harness.custom.leak"}],"role":"coder","shell_policy":"","shell_tool":false,"signal":"OK","tool":"deploy","warnings":[{"code":"policy","message":"[masked] seen"}]`},
		{"tool", []string{"/tool"}, `"reasons":[{"code":"policy","message":"bad token hunter2 for [masked]","policy":"harness.custom.leak"}],"role":"coder","shell_policy":"","shell_tool":false,"signal":"OK","tool":"[masked]"`},
		{"budget", []string{"/budget"}, `"compress_output":false,"decision":"deny","reasons"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := apply(t, tt.masks, `{"tool": "deploy", "arguments": {"password": "hunter2"}, "budget": {"tokens": 1}}`)
			b, err := r.Result(d)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("result\n%s\nlacks\n%s", b, tt.want)
			}
			if tt.masks != nil && strings.Contains(string(b), "hunter2") != (tt.name != "password") {
				t.Errorf("result %s", b)
			}
		})
	}
}

// A value under an empty key is masked in the messages as any other.
func TestMaskResultOfAnEmptyKey(t *testing.T) {
	t.Parallel()
	r := apply(t, []string{"/arguments/*"}, `{"tool": "deploy", "arguments": {"": "hunter2"}}`)
	b, err := r.Result(contract.Decision{Decision: "deny", Reasons: []contract.Reason{{Code: "policy", Message: "bad token hunter2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), "bad token [masked]") {
		t.Errorf("result %s", b)
	}
}

// Events are redacted like the decision that caused them, and the event
// given is not changed.
func TestMaskEvent(t *testing.T) {
	t.Parallel()
	reasons := []contract.Reason{{Code: "policy", Message: "bad token hunter2"}}
	e := Event{Type: PolicyViolation, Session: "s-1", Agent: "claude-code", Role: "coder",
		Violation: &Violation{Tool: "deploy", Reason: "policy: bad token hunter2", Reasons: reasons}}
	tests := []struct {
		name  string
		masks []string
		want  string
	}{
		{"password", []string{"/arguments/password"},
			`"session":"s-1","agent":"claude-code","role":"coder","tool":"deploy","reason":"policy: bad token [masked]","reasons":[{"code":"policy","message":"bad token [masked]"}]`},
		{"identity", []string{"/session", "/Agent", "/tool"},
			`"session":"[masked]","agent":"[masked]","role":"coder","tool":"[masked]","reason":"policy: bad token hunter2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := apply(t, tt.masks, `{"tool": "deploy", "session": "s-1", "agent": "claude-code", "arguments": {"password": "hunter2"}}`)
			b, _ := json.Marshal(r.Event(e))
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("event\n%s\nlacks\n%s", b, tt.want)
			}
		})
	}
	if e.Reason != "policy: bad token hunter2" || reasons[0].Message != "bad token hunter2" || e.Tool != "deploy" {
		t.Errorf("the event given was changed: %+v", e.Violation)
	}
	sw := Event{Type: RoleChanged, Session: "s", Switch: &Switch{From: "coder", To: "reviewer", By: "agent"}}
	r := apply(t, []string{"/to"}, `{"from": "coder", "to": "reviewer", "by": "agent"}`)
	if got := r.Event(sw); got.To != Masked || got.From != "coder" || sw.To != "reviewer" {
		t.Errorf("switch event %+v", got.Switch)
	}
}

// MaskResult lists what it changed of the result as OPA lists its masks:
// a replaced value under masked, a value left out under erased, as JSON
// pointers rooted at the result.
func TestMaskResultPaths(t *testing.T) {
	t.Parallel()
	r := apply(t, []string{"/tool", "/budget", "/arguments/password"}, `{"tool": "t", "budget": {"tokens": 1}, "arguments": {"password": "hunter2hunter2"}}`)
	result := map[string]any{"tool": "t", "budget": map[string]any{"tokens": 1}, "decision": "deny",
		"reasons":  []any{map[string]any{"code": "policy", "message": "bad hunter2hunter2"}, map[string]any{"code": "policy", "message": "fine"}},
		"warnings": []any{map[string]any{"code": "policy", "message": "w hunter2hunter2"}}}
	b, erased, masked, err := r.MaskResult(result)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), `"tool":"[masked]"`) || strings.Contains(string(b), `"budget"`) {
		t.Errorf("result %s", b)
	}
	if strings.Join(erased, " ") != "/result/budget" || strings.Join(masked, " ") != "/result/reasons/0/message /result/tool /result/warnings/0/message" {
		t.Errorf("erased %q masked %q", erased, masked)
	}
}
