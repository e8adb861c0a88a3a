package app

import (
	"context"
	"maps"
	"path/filepath"

	"github.com/agentharness/harness/config"
	"github.com/agentharness/harness/hook"
)

// Hook opens the governor (see Open) and returns Claude Code's hook
// handler on it, with the configuration's tool map and answer for allowed
// calls.
func (h *Harness) Hook(ctx context.Context, warn func(error)) (*hook.ClaudeCode, error) {
	g, err := h.Open(ctx, OpenOptions{Warn: warn})
	if err != nil {
		return nil, err
	}
	tools := maps.Clone(hook.DefaultTools)
	maps.Copy(tools, h.Config.HookTools)
	return &hook.ClaudeCode{Gov: g, Opts: hook.Options{Tools: tools, Allow: h.Config.HookAllow,
		ImagePixelsPerToken: h.Config.Charge.ImagePixelsPerToken, MaxImageTokens: h.Config.Charge.MaxImageTokens, AudioTokensPerKB: h.Config.Charge.AudioTokensPerKB}}, nil
}

// Protected is what the installed hook's permission rules keep the
// agent's own tools away from (hook.DenyRules): the user's harness
// directories (~/.lean-ctx, $XDG_DATA_HOME/lean-ctx: roles, policies,
// harness.toml), the state directory (the ledger, the logs), the user's
// harness.toml (not to be read either: it can hold bearer tokens) and the
// harness binary exe.
func Protected(e Env, exe string) hook.Protected {
	data := e.getenv("XDG_DATA_HOME")
	if data == "" {
		data = filepath.Join(e.Home, ".local", "share")
	}
	user := config.FindFiles(e.Home, "", nil).User
	env := map[string]string{}
	for _, k := range hook.PinnedVars {
		env[k] = e.getenv(k)
	}
	env["HOME"] = e.Home
	return hook.Protected{
		Home:    e.Home,
		Dirs:    []string{filepath.Join(e.Home, ".lean-ctx"), filepath.Join(data, "lean-ctx"), StateDir(e)},
		Secrets: []string{user},
		Exe:     exe,
		Env:     env,
	}
}
