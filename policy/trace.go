package policy

import (
	"context"
	"fmt"
	"io"

	"github.com/agentharness/harness/contract"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/lineage"
)

// TraceModes are the trace filters of Trace, as `opa eval --explain` has
// them: full, notes (the trace() calls of policies), fails, debug.
var TraceModes = []string{"full", "notes", "fails", "debug"}

// Trace decides like Decide and writes OPA's trace of the evaluation,
// filtered by mode, to w. Tracing costs about ten times a decision: only
// explain paths call it.
func (e *Engine) Trace(ctx context.Context, in contract.Input, mode string, w io.Writer) (contract.Decision, error) {
	filter := map[string]func([]*topdown.Event) []*topdown.Event{
		"full": lineage.Full, "notes": lineage.Notes, "fails": lineage.Fails, "debug": lineage.Debug,
	}[mode]
	if filter == nil {
		return contract.Decision{}, fmt.Errorf("trace mode %q: want one of %v", mode, TraceModes)
	}
	buf := topdown.NewBufferTracer()
	d, err := e.decide(ctx, in, rego.EvalQueryTracer(buf))
	topdown.PrettyTraceWithLocation(w, filter(*buf))
	return d, err
}
