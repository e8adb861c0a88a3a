package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent that controls its project's .lean-ctx/ breaks a file of it in
// the same shell command that prints what it wants to read, and mends it
// in the background: the PostToolUse that should charge the output finds
// a harness that cannot load, and what reached the model is charged
// nothing while the agent goes on. A result that could not be charged
// must be charged later, or stop the agent; it must not be free.
func TestAttackPostToolUseUnchargedWhileProjectBroken(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, file, broken string }{
		{"harness.toml", "harness.toml", "[tools\n"},
		{"a role file", filepath.Join("roles", "zz.toml"), "[limits]\nmax_tokens = 1\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home, project := t.TempDir(), gatewayProject(t)
			session := "attack-broken-" + strings.ReplaceAll(tt.name, " ", "-")
			vars := map[string]string{"LEAN_CTX_ROLE": "small"}
			out, errOut, code := runHook(t, home, vars, payload(t, "pre-read.json", session), "--project", project)
			if code != 0 || decodeAnswer(t, out).HookSpecificOutput.PermissionDecision == "deny" {
				t.Fatalf("the first read is refused: exit %d %s %s", code, out, errOut)
			}
			// The tool runs: it breaks the file, prints 2,000 tokens.
			path := filepath.Join(project, ".lean-ctx", tt.file)
			before, _ := os.ReadFile(path)
			writeFile(t, path, tt.broken)
			big := strings.Repeat("hello world ", 1000)
			post := strings.Replace(payload(t, "post-read.json", session), `"content": "package main`, `"content": "`+big+`package main`, 1)
			out, errOut, code = runHook(t, home, vars, post, "--project", project)
			var stop struct {
				Continue *bool `json:"continue"`
			}
			json.Unmarshal([]byte(out), &stop)
			stopped := stop.Continue != nil && !*stop.Continue
			// ... and mends it in the background.
			if before == nil {
				os.Remove(path)
			} else {
				writeFile(t, path, string(before))
			}
			out2, errOut2, code2 := harnessIn(t, home, nil, "budget", "--session", session, "--agent", "claude-code", "--project", project, "--json")
			var got struct {
				Budget struct{ Tokens struct{ Used int64 } }
			}
			if code2 != 0 || json.Unmarshal([]byte(out2), &got) != nil {
				t.Fatalf("budget: exit %d %s %s", code2, out2, errOut2)
			}
			// The budget is 1,000 tokens: the next read goes through.
			out3, _, _ := runHook(t, home, vars, payload(t, "pre-read.json", session), "--project", project)
			next := decodeAnswer(t, out3).HookSpecificOutput.PermissionDecision
			if !stopped && next != "deny" {
				t.Errorf("2,000 tokens reached the model, %d were charged, the agent was not stopped (exit %d, stdout %q, stderr %q), and its next call is allowed",
					got.Budget.Tokens.Used, code, out, errOut)
			}
		})
	}
}

// A hook reads at most 64 MiB of its input (hookclient.MaxPayload). An
// Edit's tool_response carries the whole original file beside the
// snippet the model reads, so an agent that edits a file past 64 MiB,
// with what it wants to read in the lines around its edit, makes a
// PostToolUse whose input the hook cuts short: it is no longer JSON, and
// was refused with exit code 2, which after a tool has run only shows the
// model a message. The snippet reached the model, nothing was charged,
// and the agent went on. An input the hook cannot read whole must stop
// the agent when it is a finished call's.
func TestAttackPostToolUsePastThePayloadBound(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), gatewayProject(t)
	session := "attack-past-the-bound"
	vars := map[string]string{"LEAN_CTX_ROLE": "small"}
	out, errOut, code := runHook(t, home, vars, payload(t, "pre-read.json", session), "--project", project)
	if code != 0 || decodeAnswer(t, out).HookSpecificOutput.PermissionDecision == "deny" {
		t.Fatalf("the first read is refused: exit %d %s %s", code, out, errOut)
	}
	// The snippet: 2,000 tokens the model reads; the original file: 64 MiB.
	snippet, _ := json.Marshal(strings.Repeat("hello world ", 1000))
	post := `{"session_id": "` + session + `", "transcript_path": "", "cwd": "` + project + `", "hook_event_name": "PostToolUse", "tool_name": "Edit",` +
		` "tool_input": {"file_path": "big.txt", "old_string": "a", "new_string": "b"},` +
		` "tool_response": {"filePath": "big.txt", "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": [` + string(snippet) + `]}],` +
		` "originalFile": "` + strings.Repeat("x", 64<<20) + `"}, "tool_use_id": "toolu_big"}`
	out, errOut, code = runHook(t, home, vars, post, "--project", project)
	var stop struct {
		Continue *bool `json:"continue"`
	}
	json.Unmarshal([]byte(out), &stop)
	stopped := stop.Continue != nil && !*stop.Continue
	out3, _, _ := runHook(t, home, vars, payload(t, "pre-read.json", session), "--project", project)
	next := decodeAnswer(t, out3).HookSpecificOutput.PermissionDecision
	if !stopped && next != "deny" {
		t.Errorf("2,000 tokens reached the model in a PostToolUse past 64 MiB, the agent was not stopped (exit %d, stdout %q, stderr %.200q), and its next call is allowed",
			code, out, errOut)
	}
}
