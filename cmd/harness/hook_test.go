package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var hookSessions atomic.Int64

// payload reads a golden hook input, with a session id of its own.
func payload(t *testing.T, name, session string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../testdata/hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "SESSION", session)
}

// runHook runs `harness hook claude-code` in this process (no daemon).
func runHook(t *testing.T, home string, vars map[string]string, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	e := env{
		getenv:  func(k string) string { return vars[k] },
		workDir: home,
		home:    home,
		stdin:   strings.NewReader(input),
	}
	var out, errb bytes.Buffer
	code = runEnv(append([]string{"hook", "claude-code"}, args...), &out, &errb, e)
	return out.String(), errb.String(), code
}

// The answer to each golden payload, for a coder and a reviewer.
func TestHookGolden(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../testdata/hooks/*.json")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, role := range []string{"coder", "reviewer"} {
			t.Run(name+"/"+role, func(t *testing.T) {
				t.Parallel()
				out, errOut, code := runHook(t, t.TempDir(), map[string]string{"LEAN_CTX_ROLE": role}, payload(t, filepath.Base(f), "golden"))
				golden(t, fmt.Sprintf("hook-%s-%s.txt", name, role), fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, out, errOut))
			})
		}
	}
}

type preAnswer struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
		AdditionalContext        string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

func decodeAnswer(t *testing.T, out string) preAnswer {
	t.Helper()
	var a preAnswer
	if out != "" {
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("answer is not JSON: %q", out)
		}
	}
	return a
}

func TestHookReviewer(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	vars := map[string]string{"LEAN_CTX_ROLE": "reviewer"}
	for _, tt := range []struct {
		payload, decision, reason string
	}{
		{"pre-bash.json", "deny", "harness: Bash (ctx_shell) denied for role reviewer: tool_denied: tool 'ctx_shell' is denied for role 'reviewer';"},
		{"pre-edit.json", "deny", "harness: Edit (ctx_edit) denied for role reviewer: tool_denied"},
		{"pre-write.json", "deny", "harness: Write (ctx_edit) denied"},
		{"pre-mcp.json", "deny", "tool_not_allowed: tool 'mcp__github__create_issue' is not allowed for role 'reviewer'"},
		{"pre-read.json", "", ""},
		{"pre-grep.json", "", ""},
	} {
		out, _, code := runHook(t, home, vars, payload(t, tt.payload, "reviewer-"+tt.payload))
		a := decodeAnswer(t, out)
		if code != 0 || a.HookSpecificOutput.PermissionDecision != tt.decision || !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, tt.reason) {
			t.Errorf("%s: exit %d, %+v", tt.payload, code, a.HookSpecificOutput)
		}
	}
	// With [hook] allow = "allow", an allowed call skips Claude Code's own prompt.
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[hook]\nallow = \"allow\"\n")
	out, _, _ := runHook(t, home, vars, payload(t, "pre-read.json", "reviewer-allow"))
	if a := decodeAnswer(t, out); a.HookSpecificOutput.PermissionDecision != "allow" {
		t.Errorf("allow: %s", out)
	}
}

// A custom policy denying rm -rf sees Bash's command.
func TestHookCustomPolicyReachesBash(t *testing.T) {
	t.Parallel()
	out, _, code := runHook(t, t.TempDir(), nil, payload(t, "pre-bash-rm.json", "rm"), "--project", withPolicies)
	a := decodeAnswer(t, out)
	if code != 0 || a.HookSpecificOutput.PermissionDecision != "deny" ||
		!strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "policy: refusing `rm -rf ~/projects`: it deletes outside the repository") {
		t.Errorf("rm -rf: exit %d %+v", code, a.HookSpecificOutput)
	}
	out, _, _ = runHook(t, t.TempDir(), nil, payload(t, "pre-bash.json", "rm-ok"), "--project", withPolicies)
	if decodeAnswer(t, out).HookSpecificOutput.PermissionDecision == "deny" {
		t.Errorf("go test was denied: %s", out)
	}
}

// PreToolUse/PostToolUse pairs spend a small budget: a warning reaches the
// agent, then the next call is refused.
func TestHookBudgetAcrossPairs(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), gatewayProject(t)
	vars := map[string]string{"LEAN_CTX_ROLE": "small"}
	big := strings.Repeat("hello world ", 100) // 201 tokens
	post := strings.Replace(payload(t, "post-read.json", "pairs"), `"content": "package main`, `"content": "`+big+`package main`, 1)
	var seen []string
	for range 8 {
		out, _, _ := runHook(t, home, vars, payload(t, "pre-read.json", "pairs"), "--project", project)
		a := decodeAnswer(t, out)
		if a.HookSpecificOutput.PermissionDecision == "deny" {
			seen = append(seen, "deny")
			if !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "budget_exhausted: tokens budget of role 'small' is exhausted") {
				t.Errorf("deny reason: %s", a.HookSpecificOutput.PermissionDecisionReason)
			}
			continue
		}
		seen = append(seen, "allow")
		out, _, _ = runHook(t, home, vars, post, "--project", project)
		if ctx := decodeAnswer(t, out).HookSpecificOutput.AdditionalContext; ctx != "" {
			seen[len(seen)-1] = "allow+context"
			if !strings.HasPrefix(ctx, "harness: Budget[small]: tokens ") {
				t.Errorf("PostToolUse context: %s", ctx)
			}
		}
	}
	if got := strings.Join(seen, " "); !strings.Contains(got, "allow allow+context") || !strings.HasSuffix(got, "deny deny") {
		t.Errorf("pairs: %s", got)
	}
	out, _, _ := harnessIn(t, home, nil, "budget", "--session", "pairs", "--agent", "claude-code", "--project", project)
	if !strings.Contains(out, "→ EXHAUSTED") {
		t.Errorf("the CLI does not see the hook's session: %s", out)
	}
}

func TestHookMalformed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ input, want string }{
		{payload(t, "malformed.json", "m"), "the hook input is not JSON; refusing the call"},
		{"[1, 2]", "not a JSON object"},
		{`{"session_id": "s"}`, "no hook_event_name"},
		{payload(t, "pre-no-tool.json", "m"), "lacks session_id or tool_name; refusing the call"},
		{"", "not JSON"},
	} {
		out, errOut, code := runHook(t, t.TempDir(), nil, tt.input)
		if code != exitDenied || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tt.input, code, out, errOut)
		}
	}
	// A broken role file refuses the call and says why; it never lets it through.
	project := t.TempDir()
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "x.toml"), "[limits]\nmax_tokens = 1\n")
	_, errOut, code := runHook(t, t.TempDir(), nil, payload(t, "pre-read.json", "b"), "--project", project)
	if code != exitDenied || !strings.Contains(errOut, `unknown key "max_tokens" in [limits]`) || !strings.Contains(errOut, "refusing the call") {
		t.Errorf("broken role file: exit %d %s", code, errOut)
	}
}

func TestHookInstall(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	settings := filepath.Join(project, ".claude", "settings.json")
	writeFile(t, settings, `{
  "model": "opus",
  "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)", "Bash(harness role set:*)"]},
  "hooks": {
    "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  }
}`)
	out, _, code := harness(t, nil, "hook", "install", "--project", "--dir", project, "--write")
	if code != 0 || !strings.Contains(out, "installed the harness hook") {
		t.Fatalf("install: %d %s", code, out)
	}
	var got struct {
		Model       string
		Permissions map[string][]string
		Hooks       map[string][]struct {
			Matcher string
			Hooks   []struct{ Type, Command string }
		}
	}
	b, _ := os.ReadFile(settings)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	post := got.Hooks["PostToolUse"]
	// The second layer: Claude Code's own rules keep the agent's tools off
	// the harness's files, the hook's settings and the operator's commands,
	// after the rules that were there, none twice.
	deny := got.Permissions["deny"]
	for i, want := range []string{"Read(./.env)", "Bash(harness role set:*)", "Edit(~/.lean-ctx/**)", "Edit(~/.local/share/lean-ctx/**)",
		"Edit(~/.local/state/lean-ctx/harness/**)", "Read(~/.lean-ctx/harness.toml)", "Edit(~/.claude/settings.json)",
		"Edit(//**/.claude/settings.json)", "Edit(//**/.claude/settings.local.json)"} {
		if i >= len(deny) || deny[i] != want {
			t.Errorf("permissions.deny[%d] is not %s: %q", i, want, deny)
			break
		}
	}
	for _, want := range []string{"Bash(harness budget reset:*)", "Bash(harness hook install:*)"} {
		if !slices.Contains(deny, want) {
			t.Errorf("permissions.deny lacks %s: %q", want, deny)
		}
	}
	if n := len(deny); n != len(slices.Compact(slices.Sorted(slices.Values(deny)))) {
		t.Errorf("permissions.deny has a rule twice: %q", deny)
	}
	if got.Model != "opus" || got.Permissions["allow"][0] != "Bash(npm test)" || len(got.Hooks["Stop"]) != 1 ||
		len(post) != 2 || post[0].Hooks[0].Command != "prettier --write" || !strings.HasSuffix(post[1].Hooks[0].Command, " hook claude-code") ||
		len(got.Hooks["PreToolUse"]) != 1 || got.Hooks["PreToolUse"][0].Matcher != "*" {
		t.Errorf("merged settings:\n%s", b)
	}
	if out, _, _ := harness(t, nil, "hook", "install", "--project", "--dir", project, "--write"); !strings.Contains(out, "already runs the harness hook") {
		t.Errorf("second install: %s", out)
	}
	writeFile(t, settings, "{not json")
	if _, errOut, code := harness(t, nil, "hook", "install", "--project", "--dir", project, "--write"); code != exitError || !strings.Contains(errOut, "is not valid JSON") {
		t.Errorf("broken settings: %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(settings); string(b) != "{not json" {
		t.Error("a broken settings file was overwritten")
	}
	out, _, _ = harness(t, nil, "hook", "install")
	if !strings.Contains(out, `"PreToolUse"`) || !strings.Contains(out, `hook claude-code`) || !strings.Contains(out, `"Edit(~/.lean-ctx/**)"`) {
		t.Errorf("printed snippet: %s", out)
	}
}

// The daemon answers as the process would, and follows edits of the files
// it loaded.
func TestHookDaemon(t *testing.T) {
	t.Parallel()
	harnessBin, _ := buildBinaries(t)
	home, project := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "team.toml"), "[role]\ninherits = \"coder\"\n")
	env := append(os.Environ(), "HOME="+home, "LEAN_CTX_ROLE=team")
	call := func(name, session string) (string, int) {
		t.Helper()
		cmd := exec.Command(harnessBin, "hook", "claude-code", "--project", project)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(payload(t, name, session))
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	// The first call answers by itself and starts the daemon.
	if out, code := call("pre-bash.json", "d-1"); code != 0 || strings.Contains(out, "deny") {
		t.Fatalf("first call: %d %s", code, out)
	}
	dir := filepath.Join(home, ".local", "state", "lean-ctx", "harness")
	var pid int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("unix", filepath.Join(dir, "hook.sock"))
		if err == nil {
			c.Close()
			b, _ := os.ReadFile(filepath.Join(dir, "hook.sock.lock"))
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first hook call did not start a daemon")
		}
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil && pid > 0 {
			p.Kill()
		}
	})
	if out, _ := call("pre-bash.json", "d-2"); strings.Contains(out, "deny") {
		t.Errorf("through the daemon: %s", out)
	}
	// An edit of the role file reaches the daemon's next answer.
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "team.toml"), "[role]\ninherits = \"coder\"\nshell_policy = \"deny\"\n")
	out, _ := call("pre-bash.json", "d-3")
	if a := decodeAnswer(t, out); a.HookSpecificOutput.PermissionDecision != "deny" || !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "shell_denied") {
		t.Errorf("after the edit: %s", out)
	}
	// Calls in flight while the files change are answered by one
	// generation or the other, never by a closed one.
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := range 20 {
		wg.Go(func() {
			out, code := call("pre-bash.json", fmt.Sprintf("c-%d", i))
			if d := decodeAnswer(t, out).HookSpecificOutput.PermissionDecision; code != 0 || (d != "deny" && d != "") {
				errs <- fmt.Sprintf("exit %d: %s", code, out)
			}
		})
		if i == 10 {
			writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "team.toml"), "[role]\ninherits = \"coder\"\n")
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	// Malformed input through the daemon: refused, never a crash.
	cmd := exec.Command(harnessBin, "hook", "claude-code")
	cmd.Env, cmd.Stdin = env, strings.NewReader("{oops")
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Errorf("malformed through the daemon: %v", err)
	}
}

// The edit_in_project example, with the project the hook finds from the
// payload's cwd: Claude Code's absolute paths inside the project are
// edits inside it; others are refused.
func TestHookEditInProject(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	src, err := os.ReadFile(filepath.Join(examplesDir, "edit_in_project.rego"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(project, ".lean-ctx", "policies", "edit_in_project.rego"), string(src))
	for _, tt := range []struct {
		path string
		deny bool
	}{
		{filepath.Join(project, "src", "main.go"), false},
		{project + "/../elsewhere/main.go", true},
		{"/etc/passwd", true},
	} {
		in := fmt.Sprintf(`{"session_id":"edits","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":%q,"old_string":"a","new_string":"b"}}`, project, tt.path)
		out, errOut, code := runHook(t, t.TempDir(), map[string]string{"HARNESS_HOOK_DAEMON": "off"}, in)
		if denied := strings.Contains(out, `"permissionDecision":"deny"`); denied != tt.deny || code != 0 || tt.deny && !strings.Contains(out, "may only edit files inside the project") {
			t.Errorf("%s: exit %d, denied %v, want %v\n%s%s", tt.path, code, denied, tt.deny, out, errOut)
		}
	}
}

// hookProcess runs the built `harness hook claude-code` with input on its
// stdin and vars over a home of its own, as Claude Code does; it returns
// when the process has exited, or has been killed after a minute (exit
// code -1).
func hookProcess(t *testing.T, home string, vars []string, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	harnessBin, _ := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, harnessBin, append([]string{"hook", "claude-code"}, args...)...)
	cmd.Env = append(os.Environ(), append([]string{"HOME=" + home, "XDG_STATE_HOME=", "XDG_DATA_HOME=", "LEAN_CTX_ROLE="}, vars...)...)
	cmd.Stdin = strings.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// preToolUse is Claude Code's PreToolUse payload of tool with the raw JSON
// input ("" for none).
func preToolUse(session, cwd, tool, input string) string {
	in := ""
	if input != "" {
		in = `, "tool_input": ` + input
	}
	return fmt.Sprintf(`{"session_id": %q, "cwd": %q, "hook_event_name": "PreToolUse", "tool_name": %q%s, "tool_use_id": "toolu_01"}`, session, cwd, tool, in)
}

// A tool input that is not an object is refused as malformed
// (invalid_input), not decided as a call without arguments that no
// argument rule sees.
func TestHookToolInputNotAnObject(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, tt := range []struct {
		name, tool, input string
		deny              string // a part of the reason; "" for no decision
	}{
		{"string", "Bash", `"rm -rf ~/projects"`, "invalid_input: input.arguments must be an object"},
		{"array", "Bash", `["rm", "-rf", "~/projects"]`, "invalid_input: input.arguments must be an object"},
		{"number", "Bash", `7`, "invalid_input"},
		{"bool", "Bash", `true`, "invalid_input"},
		{"string of an MCP tool", "mcp__github__create_issue", `"title"`, "invalid_input"},
		{"object", "Bash", `{"command": "rm -rf ~/projects"}`, "policy: refusing `rm -rf ~/projects`"},
		{"empty object", "Bash", `{}`, ""},
		{"null", "Bash", `null`, ""},
		{"absent", "Bash", ``, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := preToolUse("input-"+strings.ReplaceAll(tt.name, " ", "-"), home, tt.tool, tt.input)
			out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, in, "--project", withPolicies)
			a := decodeAnswer(t, out).HookSpecificOutput
			if tt.deny == "" {
				if code != 0 || a.PermissionDecision != "" {
					t.Errorf("exit %d, %+v, stderr %s", code, a, errOut)
				}
				return
			}
			if code != 0 || a.HookEventName != "PreToolUse" || a.PermissionDecision != "deny" || !strings.Contains(a.PermissionDecisionReason, tt.deny) {
				t.Errorf("exit %d, %+v, stderr %s", code, a, errOut)
			}
		})
	}
}

// The decision log says where a tool comes from: Claude Code's MCP tools
// (mcp__<server>__<tool>) name their server and its own name of the tool;
// built-in tools name none.
func TestHookToolOrigin(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cases := []struct {
		tool, upstream, upstreamTool string
	}{
		{"Bash", "", ""},
		{"Read", "", ""},
		{"mcp__github__create_issue", "github", "create_issue"},
		{"mcp__my_server__list_open_issues", "my_server", "list_open_issues"},
	}
	for _, tt := range cases {
		in := preToolUse("origin-"+tt.tool, home, tt.tool, `{"command": "ls", "file_path": "a.go"}`)
		if out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, in); code != 0 || strings.Contains(out, "deny") {
			t.Fatalf("%s: exit %d %s%s", tt.tool, code, out, errOut)
		}
	}
	raw, err := os.ReadFile(filepath.Join(home, ".local", "state", "lean-ctx", "harness", "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]map[string]any{}
	for line := range strings.Lines(string(raw)) {
		var e struct{ Input map[string]any }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		inputs[e.Input["session"].(string)] = e.Input
	}
	for _, tt := range cases {
		in, ok := inputs["origin-"+tt.tool]
		if !ok {
			t.Errorf("%s: no decision-log entry", tt.tool)
			continue
		}
		if up, ok := in["upstream"].(string); !ok || up != tt.upstream {
			t.Errorf("%s: input.upstream %#v, want %q", tt.tool, in["upstream"], tt.upstream)
		}
		if up, ok := in["upstream_tool"].(string); !ok || up != tt.upstreamTool {
			t.Errorf("%s: input.upstream_tool %#v, want %q", tt.tool, in["upstream_tool"], tt.upstreamTool)
		}
	}
}

// slowPolicy is a custom policy whose evaluation takes minutes: a set
// comprehension over four nested iterations of a constant array.
func slowPolicy(t *testing.T, dir string) {
	t.Helper()
	var xs []string
	for i := range 100 {
		xs = append(xs, strconv.Itoa(i))
	}
	writeFile(t, filepath.Join(dir, "slow.rego"), "package harness.custom.slow\n\nxs := ["+strings.Join(xs, ", ")+"]\n\n"+
		"deny contains msg if {\n"+
		"\tn := count({x | some a in xs; some b in xs; some c in xs; some d in xs; x := ((a + b) + c) + d})\n"+
		"\tn < 0\n"+
		"\tmsg := \"never\"\n"+
		"}\n")
}

// A hook process answers by its deadline however slow the policy: a
// PreToolUse decided on a policy that takes minutes is refused, whether
// the process decides it or waits for the daemon, with the project's
// policy or the user's.
func TestHookDeadline(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		daemon bool
		user   bool
	}{
		{"project policy, in the process", false, false},
		{"user policy, in the process", false, true},
		{"project policy, through the daemon", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home, project := shortDir(t), t.TempDir()
			// The policy's own deadline (1 s by default) would deny
			// first: this is about the deadline around it.
			writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[policy]\ntimeout = \"1m\"\n")
			if tt.user {
				slowPolicy(t, filepath.Join(home, ".lean-ctx", "policies"))
			} else {
				slowPolicy(t, filepath.Join(project, ".lean-ctx", "policies"))
			}
			vars := []string{"HARNESS_HOOK_DAEMON=off", "HARNESS_HOOK_DEADLINE=1s"}
			if tt.daemon {
				startDaemon(t, home)
				vars[0] = "HARNESS_HOOK_DAEMON="
			}
			start := time.Now()
			out, errOut, code := hookProcess(t, home, vars, preToolUse("slow", project, "Bash", `{"command": "ls"}`))
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("the hook answered after %v", took)
			}
			if code != exitDenied || out != "" || !strings.Contains(errOut, "harness hook: the harness did not answer within 1s; refusing the call") {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

// shortDir is a temporary directory with a short path, for a home whose
// state directory holds a socket (a socket's path has a length limit).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// daemonProcess is a `harness hook daemon` the test started.
type daemonProcess struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	exited chan struct{} // closed when it has exited, err then set
	err    error
}

// startDaemon starts `harness hook daemon` for home, as the hook would,
// and returns once it listens; the test's end kills it.
func startDaemon(t *testing.T, home string) *daemonProcess {
	t.Helper()
	harnessBin, _ := buildBinaries(t)
	d := &daemonProcess{cmd: exec.Command(harnessBin, "hook", "daemon"), exited: make(chan struct{})}
	d.cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME=", "XDG_DATA_HOME=", "LEAN_CTX_ROLE=")
	d.cmd.Stderr = &d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.exited
	})
	sock := filepath.Join(home, ".local", "state", "lean-ctx", "harness", "hook.sock")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return d
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon does not listen")
		}
	}
}

// SIGTERM stops a daemon that is deciding a call on a policy that takes
// minutes: the call is refused after the grace, and the daemon exits.
func TestHookDaemonSIGTERM(t *testing.T) {
	t.Parallel()
	harnessBin, _ := buildBinaries(t)
	home, project := shortDir(t), t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[policy]\ntimeout = \"1m\"\n")
	slowPolicy(t, filepath.Join(project, ".lean-ctx", "policies"))
	daemon := startDaemon(t, home)

	client := exec.Command(harnessBin, "hook", "claude-code")
	client.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME=", "XDG_DATA_HOME=", "LEAN_CTX_ROLE=")
	client.Stdin = strings.NewReader(preToolUse("sigterm", project, "Bash", `{"command": "ls"}`))
	var out, errOut bytes.Buffer
	client.Stdout, client.Stderr = &out, &errOut
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{})
	go func() { client.Wait(); close(answered) }()
	// The call has reached the daemon's governor once its session has a role.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if o, _, _ := harnessIn(t, home, nil, "sessions", "--session", "sigterm", "--json"); strings.Contains(o, `"sigterm"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call did not reach the daemon's governor")
		}
	}
	sent := time.Now()
	if err := daemon.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-daemon.exited:
		if daemon.err != nil {
			t.Errorf("the daemon exited with %v: %s", daemon.err, daemon.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not stop on SIGTERM")
	}
	t.Logf("the daemon stopped %v after SIGTERM", time.Since(sent))
	<-answered
	if code := client.ProcessState.ExitCode(); code != exitDenied || out.Len() != 0 ||
		!strings.Contains(errOut.String(), "harness hook: the hook daemon stopped before the call was decided; refusing the call") {
		t.Errorf("the hook: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// An installed harness hook gets the timeout the hook's deadline is
// derived from: with a shorter one, Claude Code would give up on the hook
// first and let the tool run.
func TestHookInstallTimeout(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	settings := filepath.Join(project, ".claude", "settings.json")
	writeFile(t, settings, `{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "/old/harness hook claude-code", "timeout": 5}]}]}}`)
	if out, errOut, code := harness(t, nil, "hook", "install", "--project", "--dir", project, "--write"); code != 0 {
		t.Fatalf("install: %d %s%s", code, out, errOut)
	}
	var got struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string
				Timeout int
			}
		}
	}
	b, _ := os.ReadFile(settings)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, event := range []string{"PreToolUse", "PostToolUse"} {
		groups := got.Hooks[event]
		if len(groups) != 1 || len(groups[0].Hooks) != 1 || groups[0].Hooks[0].Timeout != 30 || groups[0].Hooks[0].Command == "/old/harness hook claude-code" {
			t.Errorf("%s: %+v", event, groups)
		}
	}
}
