package events

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentharness/harness/contract"
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
//
// An entry that cannot be written so (a time JSON cannot hold, a defect)
// is still written, without its input and with only the
// outcome of its result (see unrecorded), and the error is returned: no
// decision goes unlogged because of what an agent put in its arguments.
func (l *DecisionLog) Log(e Entry, r *Redaction, result any) (err error) {
	b, err := l.line(e, r, result)
	if err != nil {
		if b, _ = marshalEntry(unrecorded(e, l.labels, result)); b == nil {
			return err
		}
		err = fmt.Errorf("%w (its entry was written without its input)", err)
	}
	if werr := l.f.WriteLine(b); werr != nil {
		return werr
	}
	return err
}

// unrecorded is what an entry that could not be written keeps: its ids,
// path, time, labels and custom fields, an input that says it is missing,
// and of a decision its outcome and reason codes (its messages may quote
// what a mask erases).
func unrecorded(e Entry, labels map[string]string, result any) *Entry {
	ts := e.Timestamp.UTC() // a time JSON can hold, whatever e's
	if y := ts.Year(); y < 0 || y > 9999 {
		ts = time.Time{}
	}
	out := Entry{DecisionID: e.DecisionID, Labels: labels, Path: e.Path, Timestamp: ts, Custom: e.Custom,
		Input: json.RawMessage(`{"…":"[not recorded: the entry could not be written]"}`)}
	if out.Custom.Empty() {
		out.Custom = nil
	}
	if d, ok := result.(contract.Decision); ok {
		if b, err := json.Marshal(d); err == nil {
			out.Result = outcomeOf(b)
		}
	}
	return &out
}

// line is e's line: its input and result masked by r, at most MaxLine
// bytes; a panic while it is made (a defect) is an error.
func (l *DecisionLog) line(e Entry, r *Redaction, result any) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("writing a decision-log entry: %v", p)
		}
	}()
	if e.Input, err = r.Input(); err != nil {
		return nil, err
	}
	var erased, masked []string
	if e.Result, erased, masked, err = r.MaskResult(summarised(result)); err != nil {
		return nil, err
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
	if b, err = marshalEntry(&e); err == nil && len(b) > maxJSON {
		b, err = boundEntry(e)
	}
	return b, err
}

// Close closes the file.
func (l *DecisionLog) Close() error { return l.f.Close() }
