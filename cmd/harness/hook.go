package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/roles"
)

// maxPayload bounds a hook payload read from stdin.
const maxPayload = 64 << 20

func (c *cli) hook(args []string) int {
	if len(args) == 0 {
		return c.fail("hook: want claude-code (the hook itself), install, or daemon")
	}
	switch args[0] {
	case "claude-code":
		return c.hookClaudeCode(args[1:])
	case "install":
		return c.hookInstall(args[1:])
	case "daemon":
		return c.hookDaemon(args[1:])
	}
	return c.fail("hook: unknown subcommand %q: want claude-code, install, or daemon", args[0])
}

// hookClaudeCode answers one Claude Code hook call: the payload on stdin,
// the answer on stdout, the exit code as the protocol wants it.
func (c *cli) hookClaudeCode(args []string) int {
	fs, project := c.flags("hook claude-code")
	if _, err := parse(fs, args); err != nil {
		return exitError
	}
	payload, err := io.ReadAll(io.LimitReader(c.env.stdin, maxPayload))
	if err != nil {
		fmt.Fprintf(c.stderr, "harness hook: reading the hook input: %v; refusing the call\n", err)
		return exitDenied
	}
	resp, ok := c.hookViaDaemon(payload, *project)
	if !ok {
		resp = c.hookLocal(c.env.ctx, payload, *project)
		if json.Valid(payload) {
			c.startDaemon() // for the next calls
		}
	}
	c.stdout.Write(resp.Stdout)
	io.WriteString(c.stderr, resp.Stderr)
	return resp.Exit
}

// hookLocal answers in this process: load the roles, policies and
// configuration of the payload's project, open the ledger, decide.
func (c *cli) hookLocal(ctx context.Context, payload []byte, project string) hook.Response {
	if dir := gjson.GetBytes(payload, "cwd").String(); dir != "" && project == "" {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			c.env.workDir = dir
		}
	}
	var errOut bytes.Buffer
	quiet := &cli{stdout: io.Discard, stderr: &errOut, env: c.env}
	h, closeAll, err := quiet.hookHandler(ctx, project)
	if err != nil {
		if errOut.Len() > 0 {
			err = fmt.Errorf("%w\n%s", err, strings.TrimSpace(errOut.String()))
		}
		return hookFailure(payload, err)
	}
	defer closeAll()
	resp := h.Handle(ctx, payload)
	resp.Stderr = errOut.String() + resp.Stderr
	return resp
}

// hookFailure answers when the harness itself cannot run (a broken role
// file, an unreachable ledger): a tool call is refused, with the reason.
func hookFailure(payload []byte, err error) hook.Response {
	msg := fmt.Sprintf("harness hook: the harness cannot decide: %v\n", err)
	if gjson.GetBytes(payload, "hook_event_name").String() == "PostToolUse" {
		return hook.Response{Stderr: msg + "harness hook: nothing was charged\n"}
	}
	return hook.Response{Stderr: msg + "harness hook: refusing the call (fix the error, or run: harness check)\n", Exit: exitDenied}
}

// hookInstall prints, or merges into Claude Code's settings, the hook
// configuration.
func (c *cli) hookInstall(args []string) int {
	flags := flag.NewFlagSet("harness hook install", flag.ContinueOnError)
	flags.SetOutput(c.stderr)
	project := flags.String("dir", "", "the project root `DIR` (default: found from the working directory)")
	user := flags.Bool("user", false, "install for every project: ~/.claude/settings.json")
	inProject := flags.Bool("project", false, "install for this project: .claude/settings.json (the default)")
	write := flags.Bool("write", false, "merge the hooks into the settings file (keeping everything else) instead of printing them")
	rest, err := parse(flags, args)
	if err != nil {
		return exitError
	}
	if len(rest) > 0 || (*user && *inProject) {
		return c.fail("hook install: want --project or --user, and --write to change the file")
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "harness"
	}
	command := shellQuote(exe) + " hook claude-code"
	var path string
	if *user {
		path = filepath.Join(c.env.home, ".claude", "settings.json")
	} else {
		root := *project
		if root == "" {
			root = roles.FindProjectRoot(c.env.workDir, c.env.home)
		}
		if root == "" {
			root = c.env.workDir
		}
		path = filepath.Join(root, ".claude", "settings.json")
	}
	if !*write {
		b, _ := json.MarshalIndent(hookSettings(command), "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
		fmt.Fprintf(c.stderr, "harness: merge this into %s, or run harness hook install --write\n", path)
		return exitOK
	}
	settings := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &settings); err != nil {
			return c.fail("hook install: %s is not valid JSON (%v); it is left as it is", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return c.fail("hook install: %v", err)
	}
	changed, err := mergeHooks(settings, command)
	if err != nil {
		return c.fail("hook install: %s: %v; it is left as it is", path, err)
	}
	if !changed {
		fmt.Fprintf(c.stdout, "%s already runs the harness hook\n", path)
		return exitOK
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return c.fail("hook install: %v", err)
	}
	tmp := path + ".harness-tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return c.fail("hook install: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return c.fail("hook install: %v", err)
	}
	fmt.Fprintf(c.stdout, "installed the harness hook (PreToolUse, PostToolUse) in %s\n", path)
	return exitOK
}

// hookSettings is the hooks section that runs the harness on every tool.
func hookSettings(command string) map[string]any {
	entry := func() []any {
		return []any{map[string]any{
			"matcher": "*",
			"hooks":   []any{map[string]any{"type": "command", "command": command, "timeout": 30}},
		}}
	}
	return map[string]any{"hooks": map[string]any{"PreToolUse": entry(), "PostToolUse": entry()}}
}

// mergeHooks adds the harness hook to settings for PreToolUse and
// PostToolUse, keeping every other setting and hook; a harness hook already
// there gets the new command. It reports whether anything changed.
func mergeHooks(settings map[string]any, command string) (bool, error) {
	hooks, ok := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && !ok {
		return false, errors.New(`"hooks" is not an object`)
	}
	if hooks == nil {
		hooks = map[string]any{}
		settings["hooks"] = hooks
	}
	changed := false
	for _, event := range []string{"PreToolUse", "PostToolUse"} {
		groups, ok := hooks[event].([]any)
		if hooks[event] != nil && !ok {
			return false, fmt.Errorf("hooks.%s is not an array", event)
		}
		found := false
		for _, g := range groups {
			group, _ := g.(map[string]any)
			list, _ := group["hooks"].([]any)
			for _, h := range list {
				entry, _ := h.(map[string]any)
				if cmd, _ := entry["command"].(string); strings.HasSuffix(cmd, " hook claude-code") {
					found = true
					if cmd != command {
						entry["command"], changed = command, true
					}
				}
			}
		}
		if !found {
			hooks[event] = append(groups, hookSettings(command)["hooks"].(map[string]any)[event].([]any)...)
			changed = true
		}
	}
	return changed, nil
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
