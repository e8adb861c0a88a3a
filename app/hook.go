package app

import (
	"context"
	"maps"

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
	return &hook.ClaudeCode{Gov: g, Opts: hook.Options{Tools: tools, Allow: h.Config.HookAllow}}, nil
}
