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

	"github.com/open-policy-agent/opa/v1/version"

	"github.com/agentharness/harness/pricing"
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
	path := harnessOnPath(t)
	out, _, code := harness(t, path, "hook", "install", "--project", "--dir", project, "--write")
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
		len(post) != 2 || post[0].Hooks[0].Command != "prettier --write" || post[1].Hooks[0].Command != "harness hook claude-code" ||
		len(got.Hooks["PreToolUse"]) != 1 || got.Hooks["PreToolUse"][0].Matcher != "*" {
		t.Errorf("merged settings:\n%s", b)
	}
	if out, _, _ := harness(t, path, "hook", "install", "--project", "--dir", project, "--write"); !strings.Contains(out, "settings.json already has the harness hook") {
		t.Errorf("second install: %s", out)
	}
	writeFile(t, settings, "{not json")
	if _, errOut, code := harness(t, path, "hook", "install", "--project", "--dir", project, "--write"); code != exitError || !strings.Contains(errOut, "is not valid JSON") {
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
			buildBinaries(t) // before the clock starts: the hook is timed, not go build
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
	if out, errOut, code := harness(t, harnessOnPath(t), "hook", "install", "--project", "--dir", project, "--write"); code != 0 {
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
	for _, event := range []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"} {
		groups := got.Hooks[event]
		if len(groups) != 1 || len(groups[0].Hooks) != 1 || groups[0].Hooks[0].Timeout != 30 || groups[0].Hooks[0].Command == "/old/harness hook claude-code" {
			t.Errorf("%s: %+v", event, groups)
		}
	}
}

// Every tool of Claude Code's tools reference (code.claude.com/docs/en/tools-reference,
// and the older names its hooks still send) is governed as the built-in
// roles describe themselves: a reviewer reads, searches, fetches, plans and
// delegates, and never edits or runs a shell; ops runs shells but never
// edits; a coder may do everything.
func TestHookClaudeCodeTools(t *testing.T) {
	t.Parallel()
	const (
		read    = "read"    // a reviewer and ops may
		plan    = "plan"    // a reviewer and ops may
		edit    = "edit"    // neither may
		shell   = "shell"   // ops may, a reviewer may not
		execute = "execute" // ops may, a reviewer may not
	)
	for _, tt := range []struct{ tool, kind string }{
		{"Agent", plan}, {"Task", plan}, {"SendMessage", plan}, {"TeamCreate", plan}, {"TeamDelete", plan},
		{"AskUserQuestion", plan}, {"TodoWrite", plan}, {"TodoRead", plan},
		{"TaskCreate", plan}, {"TaskGet", plan}, {"TaskList", plan}, {"TaskUpdate", plan}, {"TaskStop", plan},
		{"KillShell", plan}, {"KillBash", plan},
		{"EnterPlanMode", plan}, {"ExitPlanMode", plan}, {"CronCreate", plan}, {"CronDelete", plan}, {"CronList", plan},
		{"Read", read}, {"NotebookRead", read}, {"Grep", read}, {"Glob", read}, {"LS", read}, {"LSP", read},
		{"WebFetch", read}, {"WebSearch", read}, {"ToolSearch", read},
		{"ListMcpResourcesTool", read}, {"ReadMcpResourceTool", read}, {"BashOutput", read}, {"TaskOutput", read},
		{"Edit", edit}, {"Write", edit}, {"MultiEdit", edit}, {"NotebookEdit", edit},
		{"EnterWorktree", edit}, {"ExitWorktree", edit}, {"Artifact", edit},
		{"Bash", shell}, {"PowerShell", shell}, {"Monitor", shell},
		{"Skill", execute}, {"SlashCommand", execute}, {"REPL", execute},
	} {
		for _, role := range []string{"reviewer", "ops", "coder"} {
			t.Run(tt.tool+"/"+role, func(t *testing.T) {
				t.Parallel()
				home := t.TempDir()
				out, errOut, code := runHook(t, home, map[string]string{"LEAN_CTX_ROLE": role},
					preToolUse("tools-"+tt.tool+"-"+role, home, tt.tool, `{"description": "x"}`))
				a := decodeAnswer(t, out).HookSpecificOutput
				var wantDeny bool
				switch role {
				case "reviewer":
					wantDeny = tt.kind == edit || tt.kind == shell || tt.kind == execute
				case "ops":
					wantDeny = tt.kind == edit
				}
				if code != 0 || (a.PermissionDecision == "deny") != wantDeny {
					t.Errorf("%s as %s (%s): exit %d, %+v %s", tt.tool, role, tt.kind, code, a, errOut)
				}
				if wantDeny && strings.Contains(a.PermissionDecisionReason, "tool_not_allowed") {
					t.Errorf("%s as %s is refused for not being mapped: %s", tt.tool, role, a.PermissionDecisionReason)
				}
			})
		}
	}
}

// After a tool runs, what reaches the model is charged (the file's content,
// the command's output, the matches, the page's text, the error of a
// failed call, and its images as the gateway estimates them), not the
// envelope Claude Code wraps it in (the file's path,
// "type": "text", line counts, a whole original file for an edit).
func TestHookChargesWhatReachesTheModel(t *testing.T) {
	t.Parallel()
	tok := newTokenizer()
	for _, tt := range []struct {
		payload, content string
		media            int64 // the estimate of its images
	}{
		{"post-read-hello.json", "     1\thello world", 0}, // a read's lines come numbered
		{"post-read.json", "     1\tpackage main\n     2\t\n     3\timport \"fmt\"\n     4\t\n     5\tfunc main() {\n     6\t\tfmt.Println(\"hi\")\n     7\t}", 0},
		{"post-read-image.json", "", 1}, // a PNG of 1 × 1 pixels
		{"post-bash.json", "ok  \tdemo\t0.012s\n", 0},
		{"post-bash-stderr.json", "building\n\nmain.go:3:2: \"os\" imported and not used\n", 0},
		{"post-grep.json", "/home/user/demo/main.go:5:func main() {", 0},
		{"post-grep-files.json", "/home/user/demo/main.go\n/home/user/demo/util.go", 0},
		{"post-glob.json", "/home/user/demo/main.go\n/home/user/demo/util.go", 0},
		{"post-webfetch.json", "The page is a placeholder for documentation examples.", 0},
		{"post-websearch.json", "Decision Logs | Open Policy Agent\nhttps://www.openpolicyagent.org/docs/management-decision-logs\nOPA can log every decision it makes.", 0},
		{"post-edit.json", " func main() {\n-\tfmt.Println(\"hi\")\n+\tfmt.Println(\"hello\")\n }", 0},
		{"post-write.json", "", 0},
		{"post-todowrite.json", "", 0},
		{"post-agent.json", "The decision log is written by events/logs.go.", 0},
		{"post-mcp.json", "Issue 7: the test is flaky", 1600}, // and an image whose size cannot be read
		{"post-failure-bash.json", "Exit code 1\ncat: /nonexistent: No such file or directory", 0},
	} {
		t.Run(tt.payload, func(t *testing.T) {
			t.Parallel()
			home, session := t.TempDir(), "charge-"+strings.TrimSuffix(tt.payload, ".json")
			if _, errOut, code := runHook(t, home, nil, payload(t, tt.payload, session)); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			out, errOut, code := harnessIn(t, home, nil, "budget", "--session", session, "--agent", "claude-code", "--json")
			var got struct {
				Budget struct{ Tokens, Cost struct{ Used int64 } }
			}
			if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
				t.Fatalf("budget: exit %d %s%s", code, out, errOut)
			}
			want, _ := tok.Count(tt.content)
			want += tt.media
			if got.Budget.Tokens.Used != want {
				t.Errorf("charged %d tokens, want %d (of %q)", got.Budget.Tokens.Used, want, tt.content)
			}
			if got.Budget.Cost.Used == 0 {
				t.Errorf("no cost charged")
			}
		})
	}
}

// harnessOnPath is a $PATH on which "harness" is this very binary (the
// test binary, which runs the command in process).
func harnessOnPath(t *testing.T) map[string]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(dir, "harness")); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"PATH": dir}
}

// The project's .claude/settings.json is shared by everyone who works on
// it: it gets a hook command that works on every machine (harness on the
// PATH) and the rules that name no path of this one; what is this
// machine's goes into .claude/settings.local.json, which is not committed.
func TestHookInstallSharedSettings(t *testing.T) {
	t.Parallel()
	exe, _ := os.Executable()
	read := func(t *testing.T, path string) string {
		b, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(b)
	}
	t.Run("harness on the PATH is this binary", func(t *testing.T) {
		t.Parallel()
		project := t.TempDir()
		out, errOut, code := harness(t, harnessOnPath(t), "hook", "install", "--project", "--dir", project, "--write")
		shared, local := read(t, filepath.Join(project, ".claude", "settings.json")), read(t, filepath.Join(project, ".claude", "settings.local.json"))
		if code != 0 || strings.Count(shared, `"command": "harness hook claude-code"`) != 3 || strings.Contains(shared, exe) || strings.Contains(shared, "Edit(//tmp") {
			t.Errorf("exit %d %s%s\nshared:\n%s", code, out, errOut, shared)
		}
		if strings.Contains(local, "hook claude-code") || !strings.Contains(local, "Bash("+exe+" role set:*)") {
			t.Errorf("local:\n%s", local)
		}
	})
	t.Run("harness on the PATH is another binary", func(t *testing.T) {
		t.Parallel()
		project := t.TempDir()
		out, errOut, code := harness(t, map[string]string{"PATH": t.TempDir()}, "hook", "install", "--project", "--dir", project, "--write")
		shared, local := read(t, filepath.Join(project, ".claude", "settings.json")), read(t, filepath.Join(project, ".claude", "settings.local.json"))
		if code != 0 || strings.Contains(shared, "hook claude-code") || strings.Contains(shared, exe) || !strings.Contains(shared, "Edit(~/.lean-ctx/**)") {
			t.Errorf("exit %d %s%s\nshared:\n%s", code, out, errOut, shared)
		}
		if strings.Count(local, exe+` hook claude-code"`) != 3 || strings.Count(local, `"command": "HOME=`) != 3 || !strings.Contains(out, "settings.local.json") || !strings.Contains(out, "not committed") {
			t.Errorf("%s\nlocal:\n%s", out, local)
		}
	})
	t.Run("the shared file already runs a harness hook", func(t *testing.T) {
		t.Parallel()
		project := t.TempDir()
		writeFile(t, filepath.Join(project, ".claude", "settings.json"), `{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "harness hook claude-code", "timeout": 30}]}]}}`+"\n")
		out, errOut, code := harness(t, map[string]string{"PATH": t.TempDir()}, "hook", "install", "--project", "--dir", project, "--write")
		if local := read(t, filepath.Join(project, ".claude", "settings.local.json")); code != 0 || strings.Contains(local, "hook claude-code") || !strings.Contains(out, "charge every call twice") {
			t.Errorf("exit %d %s%s\nlocal:\n%s", code, out, errOut, local)
		}
	})
	t.Run("a --dir that does not exist", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "nowhere")
		_, errOut, code := harness(t, harnessOnPath(t), "hook", "install", "--project", "--dir", dir, "--write")
		if _, err := os.Stat(dir); code != exitError || !strings.Contains(errOut, "not an existing directory") || err == nil {
			t.Errorf("exit %d %s; stat %v", code, errOut, err)
		}
	})
}

// A call a role asks for is Claude Code's own "ask": the user is asked,
// with the reason; a denied one is still denied; in the process and
// through the real hook binary.
func TestHookAsk(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "careful.toml"),
		"[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_shell\"]\ndenied = [\"ctx_edit\"]\n")
	home := t.TempDir()
	for _, tt := range []struct {
		payload, decision, reason string
	}{
		{"pre-bash.json", "ask", "harness: Bash (ctx_shell) needs your approval for role careful: approval_required: tool 'ctx_shell' needs a person's approval for role 'careful';"},
		{"pre-edit.json", "deny", "harness: Edit (ctx_edit) denied for role careful: tool_denied"},
		{"pre-read.json", "", ""},
	} {
		for _, binary := range []bool{false, true} {
			session := fmt.Sprintf("ask-%s-%v", tt.payload, binary)
			var out, errOut string
			var code int
			if binary {
				out, errOut, code = hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off", "LEAN_CTX_ROLE=careful"}, payload(t, tt.payload, session), "--project", project)
			} else {
				out, errOut, code = runHook(t, home, map[string]string{"LEAN_CTX_ROLE": "careful"}, payload(t, tt.payload, session), "--project", project)
			}
			a := decodeAnswer(t, out).HookSpecificOutput
			if code != 0 || a.PermissionDecision != tt.decision || !strings.HasPrefix(a.PermissionDecisionReason, tt.reason) {
				t.Errorf("%s (binary %v): exit %d %+v %s", tt.payload, binary, code, a, errOut)
			}
			// Claude Code runs an approved call without asking again: an
			// asked shell call has its slot already.
			if tt.decision == "ask" {
				status, _, _ := harnessIn(t, home, nil, "budget", "--session", session, "--agent", "claude-code", "--project", project)
				if !strings.Contains(status, "| shell 1/") {
					t.Errorf("%s (binary %v): the asked shell call was not counted: %s", tt.payload, binary, status)
				}
			}
		}
	}
	// The ask is logged with its decision, and is an ApprovalRequested event.
	raw, _ := os.ReadFile(filepath.Join(home, ".local", "state", "lean-ctx", "harness", "decisions.jsonl"))
	if n := strings.Count(string(raw), `"decision":"ask"`); n != 2 {
		t.Errorf("%d asks in the decision log, want 2:\n%s", n, raw)
	}
	out, _, _ := harnessIn(t, home, nil, "events", "--type", "ApprovalRequested", "--project", project)
	if strings.Count(out, "ApprovalRequested") != 2 || !strings.Contains(out, "approval_required") {
		t.Errorf("events: %s", out)
	}
}

// Every process of an installation (each hook call, each command) labels
// its decisions with the installation's id, kept in the state directory,
// and with OPA's version where OPA puts its own (the harness's is
// harness_version).
func TestDecisionLogLabels(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for i := range 2 {
		in := preToolUse(fmt.Sprint("labels-", i), home, "Read", `{"file_path": "a.go"}`)
		if out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, in); code != 0 {
			t.Fatalf("exit %d %s%s", code, out, errOut)
		}
	}
	if _, errOut, code := harnessIn(t, home, nil, "decide", "--tool", "ctx_read", "--session", "labels-cli"); code != 0 {
		t.Fatal(errOut)
	}
	state := filepath.Join(home, ".local", "state", "lean-ctx", "harness")
	id, err := os.ReadFile(filepath.Join(state, "installation-id"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(state, "installation-id")); fi.Mode().Perm() != 0o600 {
		t.Errorf("installation-id is %v", fi.Mode())
	}
	raw, _ := os.ReadFile(filepath.Join(state, "decisions.jsonl"))
	n := 0
	for line := range strings.Lines(string(raw)) {
		var e struct{ Labels map[string]string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		n++
		if e.Labels["id"] != strings.TrimSpace(string(id)) || e.Labels["version"] != version.Version || e.Labels["harness_version"] != "0.1.0" {
			t.Errorf("labels %v; the installation's id is %s", e.Labels, id)
		}
	}
	if n != 3 {
		t.Errorf("%d entries, want 3", n)
	}
}

// A Claude Code session's cost is what its transcript records, at the
// models' prices: charged before each call is decided, the estimate of
// its tool calls not on top; harness budget and the decision log say so.
// A transcript the agent points outside the home is not read.
func TestHookTranscriptCost(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	whole, err := os.ReadFile("../../transcript/testdata/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, ".claude", "projects", "-home-dev-app", "sess.jsonl")
	writeFile(t, path, string(whole))
	withTranscript := func(name, session, transcript string) string {
		return strings.ReplaceAll(payload(t, name, session), "/home/user/.claude/projects/demo/00893aaf.jsonl", transcript)
	}
	for _, p := range []string{"pre-read.json", "post-read.json"} {
		if out, errOut, code := runHook(t, home, nil, withTranscript(p, "tx", path)); code != 0 || strings.Contains(errOut, "warning") {
			t.Fatalf("%s: exit %d %s%s", p, code, out, errOut)
		}
	}
	// Through the real hook binary, a call later.
	if out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, withTranscript("pre-read.json", "tx", path)); code != 0 {
		t.Fatalf("binary: exit %d %s%s", code, out, errOut)
	}
	prices := pricing.Default()
	sonnet, _ := prices.Price("claude-sonnet-4-5")
	opus, _ := prices.Price("claude-opus-4-5")
	c1, _ := sonnet.Of(pricing.Usage{Input: 3, CacheWrite: 4000, CacheRead: 20000, Output: 310})
	c2, _ := opus.Of(pricing.Usage{Input: 5, CacheWrite1h: 500, CacheRead: 24000, Output: 80})
	out, _, _ := harnessIn(t, home, nil, "budget", "--session", "tx", "--agent", "claude-code", "--json")
	var got struct {
		Budget     struct{ Tokens, Cost struct{ Used int64 } }
		CostSource struct {
			Source         string
			Requests       int64
			RealMicros     int64 `json:"real_micros"`
			EstimateMicros int64 `json:"estimate_micros"`
		} `json:"cost_source"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Budget.Cost.Used != c1+c2 || got.Budget.Tokens.Used == 0 || got.CostSource.Source != "transcript" || got.CostSource.Requests != 2 ||
		got.CostSource.RealMicros != c1+c2 || got.CostSource.EstimateMicros == 0 {
		t.Errorf("budget %+v, want cost %d\n%s", got, c1+c2, out)
	}
	if out, _, _ := harnessIn(t, home, nil, "budget", "--session", "tx", "--agent", "claude-code"); !strings.Contains(out, "cost: from the agent's transcript") {
		t.Errorf("budget: %s", out)
	}
	raw, _ := os.ReadFile(filepath.Join(home, ".local", "state", "lean-ctx", "harness", "decisions.jsonl"))
	if n := strings.Count(string(raw), `"custom":{"cost_source":"transcript"}`); n != 2 {
		t.Errorf("%d decisions say their cost is the transcript's:\n%s", n, raw)
	}
	// Outside the home: not read, said, and the estimate charged.
	outside := filepath.Join(t.TempDir(), "x.jsonl")
	writeFile(t, outside, string(whole))
	_, errOut, _ := runHook(t, home, nil, withTranscript("post-read.json", "away", outside))
	out, _, _ = harnessIn(t, home, nil, "budget", "--session", "away", "--agent", "claude-code", "--json")
	if !strings.Contains(errOut, "outside the home directory") || !strings.Contains(out, `"source": "estimate"`) {
		t.Errorf("outside the home: %s\n%s", errOut, out)
	}
}
