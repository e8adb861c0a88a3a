package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/govern"
)

func TestNesting(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want int
	}{
		{`1`, 0}, {`{}`, 1}, {`[[],[[]]]`, 3}, {`{"a":{"b":[1]}}`, 3},
		{`"[[[{"`, 0}, {`{"k\"[[":"\\"}`, 1}, {`["]\"]]",[{}]]`, 3},
	} {
		if got := nesting(tt.raw); got != tt.want {
			t.Errorf("nesting(%s) = %d, want %d", tt.raw, got, tt.want)
		}
	}
}

// A tool_input nested past what the gateway admits (the hook's decoder
// reads 10,000 levels) once made a decision-log line that JSON decoders
// refuse (two levels more), skipped by the log's readers, or, with a
// mask, a line without its input and an event without its session: it
// is refused as unreadable. As deep as the gateway admits, it is decided
// and its line reads back, with and without a mask.
func TestDeepToolInput(t *testing.T) {
	ctx := context.Background()
	rules := builtinRules(t)
	for _, levels := range []int{9997, 9998, 10000} {
		for _, masks := range [][]string{nil, {"/arguments/password"}} {
			path := filepath.Join(t.TempDir(), "decisions.jsonl")
			dl, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mask, err := events.NewMask(masks)
			if err != nil {
				t.Fatal(err)
			}
			h := &ClaudeCode{Gov: govern.New(govern.Options{Rules: rules,
				Store: budget.NewMemory(), Decisions: dl, Mask: mask})}
			deep := strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1)
			resp := h.Handle(ctx, []byte(`{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash","tool_input":{"command":"ls","deep":`+deep+`}}`))
			dl.Close()
			b, _ := os.ReadFile(path)
			line := bytes.TrimSpace(b)
			refused := strings.Contains(string(resp.Stdout)+resp.Stderr, "tool_input is not readable")
			if levels > maxArgumentsDepth {
				if !refused || len(line) != 0 {
					t.Errorf("%d levels, masks %v: refused %v, logged %d bytes: %s %s", levels, masks, refused, len(line), resp.Stdout, resp.Stderr)
				}
				continue
			}
			var entry struct {
				Input struct {
					Arguments struct{ Command string } `json:"arguments"`
				} `json:"input"`
			}
			if refused || json.Unmarshal(line, &entry) != nil || entry.Input.Arguments.Command != "ls" {
				t.Errorf("%d levels, masks %v: refused %v, the line (%d bytes) reads back as %+v", levels, masks, refused, len(line), entry)
			}
		}
	}
}

// Claude Code passes an MCP tool's input on to its server as it has it,
// and the model chose the keys: an input the server could read otherwise
// than the policy (two keys that differ only in case, which a Go server
// reading a struct takes for one; "__proto__", which JavaScript that
// copies the input takes for its prototype) is refused as unreadable,
// never decided. The same input with each key once is decided.
func TestToolInputReadTwoWays(t *testing.T) {
	ctx := context.Background()
	h := &ClaudeCode{Gov: govern.New(govern.Options{Rules: builtinRules(t), Store: budget.NewMemory()})}
	for _, tt := range []struct {
		name, input, want string // want: in the refusal; "" for a decided call
	}{
		{"each key once", `{"path":"notes.md","content":"x"}`, ""},
		{"a key in another case", `{"path":"notes.md","Path":"x.md","content":"x"}`, `the keys "path" and "Path" of one object differ only in case`},
		{"__proto__", `{"content":"x","__proto__":{"path":"x.md"}}`, `the key "__proto__" is refused`},
		{"a number past a double", `{"path":"notes.md","mode":1.0000000000000001}`, "the number 1.0000000000000001"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.Handle(ctx, []byte(`{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"mcp__fs__write_file","tool_input":`+tt.input+`}`))
			out := string(resp.Stdout) + resp.Stderr
			refused := strings.Contains(out, "tool_input is not readable")
			switch {
			case tt.want == "" && refused:
				t.Errorf("refused: %s", out)
			case tt.want != "" && (!refused || !strings.Contains(out, tt.want) || resp.Exit != ExitRefused):
				t.Errorf("exit %d, want a refusal saying %q: %s", resp.Exit, tt.want, out)
			}
		})
	}
}
