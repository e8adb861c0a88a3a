package gateway

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent's arguments that another parser could read otherwise than the
// policy does never reach the upstream: with a key twice, an upstream
// that reads the first (gjson, many streaming parsers) would run what the
// policy did not decide. The call is refused as invalid params; the same
// call written once runs.
func TestAttackArgumentsReadTwoWays(t *testing.T) {
	t.Parallel()
	b := newBench(t, smallRole(1000000))
	a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s", StartRole: "small"})
	a.initialize(nil)
	// FIRST and LAST stand for files of the row's own, named "first" and
	// "last": the upstream creates the one it reads.
	for _, tt := range []struct{ name, args string }{
		{"a key twice", `{"touch":FIRST,"touch":LAST}`},
		{"a key twice, once escaped", `{"touch":FIRST,"t\u006fuch":LAST}`},
		{"a key twice, nested", `{"touch":LAST,"notify":[{"a":1,"a":2}]}`},
		{"a key in another case", `{"touch":FIRST,"Touch":LAST}`},
		{"the tool's key in another case alone", `{"TOUCH":LAST}`},
		{"the tool's key in another case, escaped", `{"t\u006fUCH":LAST}`},
		{"a number past a double", `{"touch":LAST,"x":1.0000000000000001}`},
		{"__proto__", `{"touch":LAST,"__proto__":{"touch":FIRST}}`},
		{"a lone surrogate", `{"touch":LAST,"x":"\udc00"}`},
		{"bytes not UTF-8", "{\"touch\":LAST,\"x\":\"\xff\"}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			first, last := filepath.Join(dir, "first"), filepath.Join(dir, "last")
			args := strings.NewReplacer("FIRST", string(mustJSON(first)), "LAST", string(mustJSON(last))).Replace(tt.args)
			args = strings.TrimSuffix(args, "}") + `,"result":{"content":[]}}`
			m := a.await(a.request("tools/call", json.RawMessage(`{"name":"raw","arguments":`+args+`}`)))
			if m.Error == nil || m.Error.Code != codeInvalidParams {
				t.Fatalf("not refused as invalid params: %+v", m)
			}
			for _, f := range []string{first, last} {
				if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("the upstream ran the call (%s: %v)", f, err)
				}
			}
		})
	}
	// A tool's name in another case: an upstream that looks its tools up
	// without regard to case (the raw upstream takes any name) would run
	// the listed tool, decided by the policy as another.
	t.Run("the tool's name in another case", func(t *testing.T) {
		ran := filepath.Join(t.TempDir(), "ran")
		m := a.await(a.request("tools/call", map[string]any{"name": "RAW", "arguments": map[string]any{"touch": ran, "result": map[string]any{"content": []any{}}}}))
		if m.Error == nil || m.Error.Code != codeInvalidParams || !strings.Contains(m.Error.Message, `the tool listed is "raw"`) {
			t.Fatalf("not refused as invalid params: %+v", m)
		}
		if _, err := os.Stat(ran); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the upstream ran the call (%v)", err)
		}
	})
	last := filepath.Join(t.TempDir(), "last")
	a.tool("raw", map[string]any{"touch": last, "result": map[string]any{"content": []any{}}})
	if _, err := os.Stat(last); err != nil {
		t.Fatalf("the same call with each key once did not run: %v", err)
	}
}
