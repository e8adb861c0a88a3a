package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Command is the hook's command line in Claude Code's settings, for the
// harness binary exe.
func Command(exe string) string { return shellQuote(exe) + " hook claude-code" }

// Install merges the harness hook (command) and the permission rules deny
// (DenyRules) into the Claude Code settings file at path, keeping every
// other setting, hook and rule; a harness hook already there gets the new
// command and timeout, and a rule already there is not added again. The
// file is replaced atomically, and left as it is when it cannot be read as
// settings. It reports whether anything changed.
func Install(path, command string, deny []string) (bool, error) {
	settings := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &settings); err != nil {
			return false, fmt.Errorf("%s is not valid JSON (%v); it is left as it is", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	hooks, err := mergeHooks(settings, command)
	if err != nil {
		return false, fmt.Errorf("%s: %v; it is left as it is", path, err)
	}
	rules, err := mergeDeny(settings, deny)
	if err != nil {
		return false, fmt.Errorf("%s: %v; it is left as it is", path, err)
	}
	if !hooks && !rules {
		return false, nil
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	tmp := path + ".harness-tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}

// Timeout is the timeout of the installed hook in Claude Code's settings.
// Claude Code lets the tool run when its hook takes longer, so the hook
// process answers well within it (hookd.Deadline).
const Timeout = 30 * time.Second

// Settings is what Install merges into Claude Code's settings: the hooks
// that run command on every tool, before and after it, and the permission
// rules deny.
func Settings(command string, deny []string) map[string]any {
	entry := func() []any {
		return []any{map[string]any{
			"matcher": "*",
			"hooks":   []any{map[string]any{"type": "command", "command": command, "timeout": int(Timeout / time.Second)}},
		}}
	}
	s := map[string]any{"hooks": map[string]any{"PreToolUse": entry(), "PostToolUse": entry()}}
	if len(deny) > 0 {
		s["permissions"] = map[string]any{"deny": deny}
	}
	return s
}

// mergeHooks adds the harness hook to settings for PreToolUse and
// PostToolUse, keeping every other setting and hook; a harness hook already
// there gets the new command and the hook's timeout (Timeout: the hook
// process answers within it). It reports whether anything changed.
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
					if t, _ := entry["timeout"].(float64); t != Timeout.Seconds() {
						entry["timeout"], changed = int(Timeout/time.Second), true
					}
				}
			}
		}
		if !found {
			hooks[event] = append(groups, Settings(command, nil)["hooks"].(map[string]any)[event].([]any)...)
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
