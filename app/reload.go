package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentharness/harness/watch"
)

// Reload loads the world again, as Load would, and puts the new roles,
// policies and role assignments ([enforcement] default_role, [agents]) in
// force in the governor Open returned, at once. The ledger and the logs
// stay as they are, and so do the parts of the configuration read only at
// start ([ledger], [log], [cost], [enforcement] mode, [gateway],
// [[upstream]]); the Harness itself keeps describing the load at start. If
// the new files do not load, nothing changes and the error says why (file,
// line, column): the last good policy stays in force.
func (h *Harness) Reload(ctx context.Context) error {
	if h.gov == nil {
		return errors.New("reload: the harness is not open")
	}
	next, err := load(ctx, h.Params, h.Location)
	if err != nil {
		return err
	}
	// The gateway's tokens are read at start: the roles they name must
	// stay.
	for _, t := range h.Config.Tokens {
		if _, ok := next.Roles.Get(t.Role); t.Role != "" && !ok {
			return fmt.Errorf("role %q is gone, but the gateway token of agent %s starts sessions in it (tokens change at the next start)", t.Role, t.Agent)
		}
	}
	h.gov.Swap(next.Rules())
	if m := h.Params.Metrics; m != nil {
		next.know(m)
	}
	return nil
}

// Watch reloads (see Reload) whenever a file of Sources changes, until ctx
// ends: reloaded hears of each reload, failed of each one that kept the
// last good policy.
func (h *Harness) Watch(ctx context.Context, reloaded func(), failed func(error)) error {
	return watch.Run(ctx, watch.Options{
		Paths:    h.Sources(),
		Rebuild:  func() error { return h.Reload(ctx) },
		OnError:  failed,
		OnReload: reloaded,
	})
}
