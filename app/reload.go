package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentharness/harness/internal/strict"
	"github.com/agentharness/harness/roles"

	"github.com/agentharness/harness/watch"
)

// Reload loads the world again, as Load would, and puts the new roles,
// policies and role assignments ([enforcement] default_role, [agents]) in
// force in the governor Open returned, at once. The ledger and the logs
// stay as they are, and so do the parts of the configuration read only at
// start ([ledger], [log], [cost], [enforcement] mode, [gateway],
// [[upstream]]); the Harness itself keeps describing the load at start.
//
// If the new files do not load, the error says why (file, line, column).
// When the user's own files are at fault, the last good policy stays in
// force. When a project's file is (one of the repository's, which the
// agent writes), the last good rules stay but decide nothing: every call
// but an exempt tool's is refused, and every switch, until the files load
// again (govern.Governor.Restrain). Otherwise an agent could break a file
// to hold the rules of its choosing in force, past any tightening the
// operator makes after.
func (h *Harness) Reload(ctx context.Context) error {
	if h.gov == nil {
		return errors.New("reload: the harness is not open")
	}
	next, err := load(ctx, h.Params, h.Location)
	if err != nil {
		if h.projectsFault(err) {
			h.gov.Restrain(restrained(err))
		}
		return err
	}
	// The gateway's tokens are read at start: the roles they name must
	// stay.
	for _, t := range h.Config.Tokens {
		if _, ok := next.Roles.Get(t.Role); t.Role != "" && !ok {
			err := fmt.Errorf("role %q is gone, but the gateway token of agent %s starts sessions in it (tokens change at the next start)", t.Role, t.Agent)
			if def, ok := h.gov.Rules().Engine.Document().Roles[t.Role]; ok && def.Source == string(roles.SourceProject) {
				h.gov.Restrain(restrained(err)) // the repository's to remove
			}
			return err
		}
	}
	h.gov.Swap(next.Rules())
	if m := h.Params.Metrics; m != nil {
		next.know(m)
	}
	return nil
}

// projectsFault says whether a load failed through a project's file: an
// error placed in one of the project's layers.
func (h *Harness) projectsFault(err error) bool {
	var list strict.ErrorList
	if !errors.As(err, &list) {
		return false
	}
	for _, e := range list {
		for _, layer := range h.Location.Layers {
			if rel, err := filepath.Rel(layer, e.File); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
				return true
			}
		}
	}
	return false
}

// restrained is what a refusal says while a project's files do not load.
func restrained(err error) string {
	first := err.Error()
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i] + " (and more: harness check lists them)"
	}
	return "the project's files do not load (" + first + "): every call but ctx_session's is refused until they do, " +
		"since the rules in force may be looser than what the files now say"
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
