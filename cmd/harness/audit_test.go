package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentharness/harness/contract"
)

// A project's harness.toml may not mask: a mask erases what the agent did
// from the logs, and the agent edits its repository. Every command refuses
// to load it, with the file, line, column and key.
func TestProjectMayNotMask(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	file := filepath.Join(project, ".lean-ctx", "harness.toml")
	writeFile(t, file, "[tools]\nshell = [\"bash\"]\n\n[log]\nmask = [\"/arguments\", \"/tool\", \"/agent\", \"/session\", \"/role\"]\n")
	want := file + ":5:1: log.mask may only be set in the user's harness.toml"
	out, _, code := harness(t, nil, "check", "--project", project)
	if code != exitCheck || !strings.Contains(out, want) {
		t.Errorf("check: exit %d, want %d and %q:\n%s", code, exitCheck, want, out)
	}
	home := t.TempDir()
	_, errOut, code := harnessIn(t, home, nil, "decide", "--project", project, "--session", "s", "--record", "--tool", "ctx_edit", "--args", `{"path": "a.go"}`)
	if code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("decide: exit %d, want %d and %q:\n%s", code, exitError, want, errOut)
	}
}

// leakPolicy quotes a masked argument in its messages, as a careless (or
// hostile) custom policy would.
const leakPolicy = `package harness.custom.leak

deny contains msg if {
	input.tool == "ctx_edit"
	some k, v in input.arguments
	lower(k) == "password"
	msg := sprintf("bad token %s in %v", [v, input.arguments])
}

warn contains msg if {
	input.tool == "ctx_read"
	some k, v in input.arguments
	lower(k) == "password"
	msg := sprintf("token %s seen", [v])
}
`

// A user's mask on /arguments/password keeps the value out of both logs,
// whatever the case of the key and wherever a policy quotes it: the logged
// input, the decision's reasons and warnings, the PolicyViolation event.
func TestMaskedValuesReachNoLog(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[log]\nmask = [\"/arguments/password\"]\n")
	writeFile(t, filepath.Join(home, ".lean-ctx", "policies", "leak.rego"), leakPolicy)
	const secret = "hunter2hunter2"
	calls := []struct {
		tool, args string
		code       int
	}{
		{"ctx_edit", `{"Password": "` + secret + `", "path": "a.go"}`, exitDenied},
		{"ctx_read", `{"PASSWORD": "` + secret + `", "path": "b.go"}`, exitOK},
	}
	for _, c := range calls {
		out, errOut, code := harnessIn(t, home, nil, "decide", "--session", "S", "--record", "--tool", c.tool, "--args", c.args)
		if code != c.code {
			t.Fatalf("decide %s: exit %d, want %d\n%s%s", c.tool, code, c.code, out, errOut)
		}
	}
	state := filepath.Join(home, ".local", "state", "lean-ctx", "harness")
	for _, name := range []string{"decisions.jsonl", "events.jsonl"} {
		raw, err := os.ReadFile(filepath.Join(state, name))
		if err != nil || len(raw) == 0 {
			t.Fatalf("%s: %v (%d bytes)", name, err, len(raw))
		}
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the masked value reached %s:\n%s", name, raw)
		}
	}
	entries := logEntries(t, home)
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(entries), entries)
	}
	deny, warn := entries[0], entries[1]
	if strings.Join(deny.Erased, " ") != "/input/arguments/password" || strings.Join(warn.Erased, " ") != "/input/arguments/password" {
		t.Errorf("erased %v and %v", deny.Erased, warn.Erased)
	}
	if deny.Input.Arguments["path"] != "a.go" || len(deny.Input.Arguments) != 1 {
		t.Errorf("logged arguments %v: want only path", deny.Input.Arguments)
	}
	if len(deny.Result.Reasons) != 1 || !strings.HasPrefix(deny.Result.Reasons[0].Message, "bad token [masked] in ") {
		t.Errorf("deny reasons %+v", deny.Result.Reasons)
	}
	if len(warn.Result.Warnings) != 1 || warn.Result.Warnings[0].Message != "token [masked] seen" {
		t.Errorf("warnings %+v", warn.Result.Warnings)
	}
	list := eventsOf(t, home, "--type", "PolicyViolation")
	if len(list) != 1 || !strings.HasPrefix(list[0].Reason, "policy: bad token [masked] in ") {
		t.Errorf("violations %+v", list)
	}
}

type logEntry struct {
	DecisionID string `json:"decision_id"`
	Input      struct {
		Tool      string         `json:"tool"`
		Agent     string         `json:"agent"`
		Session   string         `json:"session"`
		Arguments map[string]any `json:"arguments"`
	} `json:"input"`
	Result contract.Decision `json:"result"`
	Erased []string          `json:"erased"`
	Labels map[string]string `json:"labels"`
}

// logEntries are the decision-log entries, as harness log --json prints them.
func logEntries(t *testing.T, home string) []logEntry {
	t.Helper()
	out, errOut, code := harnessIn(t, home, nil, "log", "--json", "--limit", "0")
	if code != 0 {
		t.Fatalf("log: exit %d: %s", code, errOut)
	}
	var list []logEntry
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e logEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not an entry: %v: %s", err, line)
		}
		list = append(list, e)
	}
	return list
}

// floodPolicy answers one call with two thousand messages of a kilobyte
// (2 MB).
var floodPolicy = `package harness.custom.flood

deny contains sprintf("flood message number %d of a great many: %s", [i, "` + strings.Repeat("flood ", 170) + `"]) if {
	input.tool == "flood"
	some i in numbers.range(1, 2000)
}
`

// No call can push the calls before it out of the rotated logs: not a deny
// with two thousand messages of a kilobyte, not megabytes of arguments. The policy
// answers at most 20 messages of a kind, and each line is cut to 64 KiB,
// so even files of 1 MiB, one kept, hold the first call. (The policy's
// deadline is lifted: the flood must be answered, not cut short.)
func TestOneCallCannotFlushTheLogs(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[log]\nmax_size_mb = 1\nmax_files = 1\n[policy]\ntimeout = \"1m\"\n")
	writeFile(t, filepath.Join(home, ".lean-ctx", "policies", "flood.rego"), floodPolicy)
	decide := func(tool string, args string, want int) {
		t.Helper()
		cmd := []string{"decide", "--session", "S", "--agent", "claude-code", "--tool", tool}
		if args != "" {
			cmd = append(cmd, "--args", args)
		}
		if out, errOut, code := harnessIn(t, home, nil, cmd...); code != want {
			t.Fatalf("decide %s: exit %d, want %d\n%.500s%s", tool, code, want, out, errOut)
		}
	}
	decide("ctx_edit", `{"path": "first.go"}`, exitOK)
	for range 2 {
		decide("flood", "", exitDenied)
	}
	edit, _ := json.Marshal(map[string]string{"path": "big.go", "new_string": strings.Repeat("package big\n", 120000)})
	for range 2 {
		decide("ctx_edit", string(edit), exitOK)
	}
	state := filepath.Join(home, ".local", "state", "lean-ctx", "harness")
	for _, name := range []string{"decisions.jsonl", "events.jsonl"} {
		for _, f := range []string{name, name + ".1"} {
			raw, err := os.ReadFile(filepath.Join(state, f))
			if err != nil {
				continue // not rotated yet
			}
			for i, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
				if len(line)+1 > 64<<10 || !json.Valid(line) {
					t.Errorf("%s:%d: %d bytes (valid JSON: %v)", f, i+1, len(line), json.Valid(line))
				}
			}
		}
	}
	entries := logEntries(t, home)
	if len(entries) != 5 || entries[0].Input.Arguments["path"] != "first.go" {
		t.Fatalf("%d entries kept of 5, the first of path %v", len(entries), entries[0].Input.Arguments["path"])
	}
	flood := entries[1].Result.Reasons
	if len(flood) != 20 || flood[19].Message != "… and 1981 more refusals of custom policies" {
		t.Errorf("the flood's reasons are not summarised: %d, the last %+v", len(flood), flood[len(flood)-1])
	}
	if s, _ := entries[4].Input.Arguments["new_string"].(string); !strings.HasSuffix(s, " bytes]") || len(s) > 64<<10 {
		t.Errorf("the large edit is not cut: %d bytes, ending %q", len(s), s[max(len(s)-40, 0):])
	}
	if list := eventsOf(t, home, "--type", "PolicyViolation"); len(list) != 2 {
		t.Errorf("%d violations kept of 2", len(list))
	}
	out, _, _ := harnessIn(t, home, nil, "log")
	if !strings.Contains(out, "flood → deny "+strings.Repeat("policy,", 19)+"policy\n") {
		t.Errorf("log listing:\n%.2000s", out)
	}
}

// forged is a tool name (the agent's to choose) that would start a line of
// its own in the readable views, clear the screen and reverse the text.
const forged = "x\n2026-01-01T00:00:00Z  RoleChanged      a/S  coder → admin\x1b[2J\u202e"

// forgedShown is how the readable views must show it: on one line, every
// control character escaped.
const forgedShown = `x\n2026-01-01T00:00:00Z  RoleChanged      a/S  coder → admin\x1b[2J\u202e`

// The readable views show what the agent chose (tool names, the messages
// of policies quoting its arguments, the descriptions of its project's
// roles) with control characters escaped, so that it cannot forge a line
// or drive the operator's terminal.
func TestReadableViewsEscapeControlCharacters(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "policies", "echo.rego"),
		"package harness.custom.echo\n\ndeny contains sprintf(\"refusing %s\", [input.arguments.note]) if is_string(input.arguments.note)\n")
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "tricky.toml"),
		"[role]\ninherits = \"reviewer\"\ndescription = \"fine\\n\\u001b[2Jforged line\"\n")
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := harnessIn(t, home, nil, append(args, "--project", project)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errOut)
		}
		if strings.ContainsAny(out, "\x1b\r\u202e") {
			t.Errorf("%v printed a control character raw:\n%q", args, out)
		}
		return out
	}
	lines := func(s string) int { return strings.Count(s, "\n") }
	out := run(exitDenied, "decide", "--session", "S", "--agent", "a", "--role", "tricky", "--tool", forged, "--args", `{"note": "a\nb\u001b[31m"}`)
	for _, want := range []string{"deny: role tricky, tool " + forgedShown + "\n", `  reason  policy: refusing a\nb\x1b[31m` + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("decide lacks %q:\n%s", want, out)
		}
	}
	out = run(exitOK, "events")
	if lines(out) != 1 || !strings.Contains(out, "tool "+forgedShown+": ") || !strings.Contains(out, `policy: refusing a\nb\x1b[31m`) {
		t.Errorf("events, one line expected:\n%s", out)
	}
	out = run(exitOK, "log")
	if lines(out) != 1 || !strings.Contains(out, "  a/S  tricky "+forgedShown+" → deny ") {
		t.Errorf("log, one line expected:\n%s", out)
	}
	id := eventsOf(t, home)[0].DecisionID
	out = run(exitOK, "log", "--decision", id)
	var entry struct {
		Input struct{ Tool string } `json:"input"`
	}
	if err := json.Unmarshal([]byte(out), &entry); err != nil || entry.Input.Tool != forged || !strings.Contains(out, `admin\u001b[2J\u202e"`) {
		t.Errorf("log --decision: %v, tool %q:\n%s", err, entry.Input.Tool, out)
	}
	out = run(exitOK, "role", "--session", "S", "--agent", "a")
	if !strings.Contains(out, `role tricky (fine\n\x1b[2Jforged line)`) {
		t.Errorf("role:\n%s", out)
	}
	out = run(exitOK, "roles", "list")
	if !strings.Contains(out, `fine\n\x1b[2Jforged line`) || strings.Contains(out, "\nforged line") {
		t.Errorf("roles list:\n%s", out)
	}
	out = run(exitDenied, "decide", "--role", "tricky", "--tool", forged, "--explain")
	if !strings.Contains(out, "  tool "+forgedShown+": a tool\n") {
		t.Errorf("explain:\n%s", out)
	}
}
