package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentharness/harness/contract"
)

// FuzzMaskAndBound: for any arguments and any message, the masked value
// never reaches the entry, and the entry, cut to its line, stays valid JSON
// within MaxLine.
func FuzzMaskAndBound(f *testing.F) {
	f.Add(`{"password": "hunter2", "path": "a.go"}`, "bad token %s", 1)
	f.Add(`{"Password": "a\"b", "x": [1, 2, {"y": "z"}]}`, "%s and %s again", 3)
	f.Add(`{"PASSWORD": "\u2028\u001b<&>", "n": 123456}`, `quoted: {"password": "%s"}`, 200)
	f.Add(`{"password": {"user": "alice", "pin": 98765}}`, "user alice pin 98765 %s", 50000)
	f.Fuzz(func(t *testing.T, args, format string, repeat int) {
		var arguments any
		dec := json.NewDecoder(strings.NewReader(args))
		dec.UseNumber()
		if dec.Decode(&arguments) != nil {
			return
		}
		obj, ok := arguments.(map[string]any)
		if !ok {
			return
		}
		var secret string
		for k, v := range obj {
			if s, ok := v.(string); ok && strings.EqualFold(k, "password") && len(s) > 0 {
				secret = s
			}
		}
		// Up to 150 reasons of some 4 lines' worth in all: past the cap, not
		// so far that an execution is slow.
		repeat = max(1, min(repeat, 100000))
		n := min(repeat, 150)
		one := strings.ReplaceAll(format, "%s", secret)
		msg := strings.Repeat(one, max(1, min(repeat, 4*MaxLine/n/max(1, len(one)))))
		mask, _ := NewMask([]string{"/arguments/password"})
		r, err := mask.Apply(map[string]any{"tool": "t", "arguments": arguments})
		if err != nil {
			t.Fatal(err)
		}
		reasons := make([]contract.Reason, n)
		for i := range reasons {
			reasons[i] = contract.Reason{Code: "policy", Message: msg}
		}
		in, _ := r.Input()
		res, err := r.Result(summarised(contract.Decision{Decision: "deny", Tool: "t", Reasons: reasons}))
		if err != nil {
			t.Fatal(err)
		}
		var logged struct{ Arguments map[string]any }
		json.Unmarshal(in, &logged)
		for k := range logged.Arguments {
			if strings.EqualFold(k, "password") {
				t.Fatalf("the masked %s reached the input %s", k, in)
			}
		}
		if secret != "" {
			// The marker may itself hold a short value: look between them.
			for part := range strings.SplitSeq(r.Text(msg), Masked) {
				if strings.Contains(part, secret) {
					t.Fatalf("the masked %q reached a message: %q", secret, r.Text(msg))
				}
			}
		}
		b, err := json.Marshal(Entry{DecisionID: "d", Path: "harness/decision", Input: in, Result: res, Erased: r.Erased()})
		if err == nil && len(b) > maxJSON {
			b, err = boundEntry(Entry{DecisionID: "d", Path: "harness/decision", Input: in, Result: res, Erased: r.Erased()})
		}
		if err != nil || len(b) > maxJSON || !json.Valid(b) {
			t.Fatalf("entry of %d bytes (valid %v): %v", len(b), json.Valid(b), err)
		}
		var back struct {
			Result contract.Decision `json:"result"`
		}
		if err := json.Unmarshal(b, &back); err != nil || back.Result.Decision != "deny" {
			t.Fatalf("the entry lost its shape: %v %.300s", err, b)
		}
	})
}
