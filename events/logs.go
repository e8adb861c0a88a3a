package events

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// EventLog is a Sink that appends events to a JSONL file, one event a line.
type EventLog struct{ f *File }

// OpenEventLog opens the events file at path.
func OpenEventLog(path string, rot Rotation) (*EventLog, error) {
	f, err := OpenFile(path, rot)
	if err != nil {
		return nil, err
	}
	return &EventLog{f: f}, nil
}

// Emit appends e, in one line of at most MaxLine bytes (newline included).
func (l *EventLog) Emit(e Event) error {
	b, err := Marshal(e)
	if err != nil {
		return err
	}
	return l.f.WriteLine(b)
}

// Marshal is e's JSON as the events log writes it: at most MaxReasons
// reasons, and at most MaxLine-1 bytes, long strings and lists cut with a
// marker.
func Marshal(e Event) ([]byte, error) {
	if e.Violation != nil && len(e.Reasons) > MaxReasons+1 {
		v := *e.Violation
		v.Reasons = SummariseReasons(v.Reasons)
		e.Violation = &v
	}
	b, err := json.Marshal(e)
	if err == nil && len(b) > maxJSON {
		b, err = boundEvent(e, b)
	}
	return b, err
}

// Close closes the file.
func (l *EventLog) Close() error { return l.f.Close() }

// Entry is one decision-log line, in the shape of OPA's decision logs
// (EventV1 of OPA's v1/plugins/logs, whose fields it uses and no other),
// so that tools that read those read these.
type Entry struct {
	DecisionID string `json:"decision_id"`
	// Labels describe the harness that decided: OPA's id (of the
	// installation) and version, the harness's version (harness_version),
	// and the client that asked, when it said.
	Labels map[string]string `json:"labels,omitempty"`
	// Bundles are the bundles the decision was made with, by name: the
	// harness's, at its revision.
	Bundles   map[string]BundleInfo `json:"bundles,omitempty"`
	Path      string                `json:"path"`
	Input     json.RawMessage       `json:"input,omitempty"`
	Result    json.RawMessage       `json:"result,omitempty"`
	Timestamp time.Time             `json:"timestamp"`
	Metrics   map[string]int64      `json:"metrics,omitempty"`
	// Erased lists what masking removed, as OPA does: the rules that
	// erased something from the input (/input/arguments/password), and
	// the result's paths left out (/result/...).
	Erased []string `json:"erased,omitempty"`
	// Masked lists the result's paths whose value masking replaced by
	// Masked (/result/tool, /result/reasons/0/message).
	Masked []string `json:"masked,omitempty"`
	// Custom holds what OPA's schema has no field for.
	Custom *Custom `json:"custom,omitempty"`
}

// BundleInfo is a bundle a decision was made with.
type BundleInfo struct {
	Revision string `json:"revision,omitempty"`
}

// Custom are the harness's own fields of a decision-log entry, under
// EventV1's custom.
type Custom struct {
	// Shadow is true when the enforcement mode is shadow: the decision was
	// recorded but not enforced.
	Shadow bool `json:"shadow,omitempty"`
	// CostSource says where the session's cost comes from: "transcript"
	// (the usage its agent recorded, at the model's price) or "estimate"
	// (the tokens of its tool calls); "" when not known.
	CostSource string `json:"cost_source,omitempty"`
	// ApprovedBy says who approved a call the policy decided ask, which
	// then ran (the gateway's elicitation of the agent's client); "" for
	// a call nobody approved.
	ApprovedBy string `json:"approved_by,omitempty"`
	// Shell is 1 on a decision that took a shell slot (its key is
	// CustomShell): with the charges' entries, what adds up to the
	// ledger's shell counter.
	Shell int64 `json:"shell,omitempty"`
}

// Empty reports whether c says nothing.
func (c *Custom) Empty() bool { return c == nil || *c == Custom{} }

// DecisionLog appends decision-log entries.
type DecisionLog struct {
	f      *File
	labels map[string]string
}

// DecisionLogOptions configure a DecisionLog.
type DecisionLogOptions struct {
	Rotation Rotation
	// Labels go into every entry (OPA puts the instance id and version
	// there).
	Labels map[string]string
}

// OpenDecisionLog opens the decision log at path.
func OpenDecisionLog(path string, o DecisionLogOptions) (*DecisionLog, error) {
	f, err := OpenFile(path, o.Rotation)
	if err != nil {
		return nil, err
	}
	return &DecisionLog{f: f, labels: o.Labels}, nil
}

// Log appends an entry for a decision: its input as r masked it (see
// Mask.Apply), and its result, its lists of reasons summarised (see
// SummariseReasons), marshalled and masked by r; in one line of at most
// MaxLine bytes (newline included).
func (l *DecisionLog) Log(e Entry, r *Redaction, result any) error {
	var err error
	if e.Input, err = r.Input(); err != nil {
		return err
	}
	var erased, masked []string
	if e.Result, erased, masked, err = r.MaskResult(summarised(result)); err != nil {
		return err
	}
	e.Erased, e.Masked = append(slices.Clone(r.Erased()), erased...), masked
	if e.Custom.Empty() {
		e.Custom = nil
	}
	if e.Labels == nil {
		e.Labels = l.labels
	} else { // the entry's own labels (the client that asked) beside the log's
		labels := maps.Clone(l.labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, e.Labels)
		e.Labels = labels
	}
	b, err := marshalEntry(&e)
	if err == nil && len(b) > maxJSON {
		b, err = boundEntry(e)
	}
	if err != nil {
		return err
	}
	return l.f.WriteLine(b)
}

// Close closes the file.
func (l *DecisionLog) Close() error { return l.f.Close() }
