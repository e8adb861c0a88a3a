package events

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
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

// Emit appends e.
func (l *EventLog) Emit(e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return l.f.WriteLine(b)
}

// Close closes the file.
func (l *EventLog) Close() error { return l.f.Close() }

// Entry is one decision-log line, in the shape of OPA's decision logs, so
// that tools that read those read these.
type Entry struct {
	DecisionID string            `json:"decision_id"`
	Path       string            `json:"path"`
	Input      json.RawMessage   `json:"input"`
	Result     json.RawMessage   `json:"result"`
	Timestamp  time.Time         `json:"timestamp"`
	Metrics    map[string]int64  `json:"metrics,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	// Erased lists the input paths removed by masking.
	Erased []string `json:"erased,omitempty"`
	// Shadow is true when the enforcement mode is shadow: the decision was
	// recorded but not enforced.
	Shadow bool `json:"shadow,omitempty"`
}

// DecisionLog appends decision-log entries, masking configured input paths.
type DecisionLog struct {
	f      *File
	masks  [][]string
	labels map[string]string
}

// DecisionLogOptions configure a DecisionLog.
type DecisionLogOptions struct {
	Rotation Rotation
	// Mask lists input paths as JSON pointers ("/arguments/password") to
	// erase from the input before it is written. A "*" segment matches
	// every key of an object.
	Mask []string
	// Labels go into every entry (OPA puts the instance id and version
	// there).
	Labels map[string]string
}

// ParsePointer splits a JSON pointer into its keys.
func ParsePointer(p string) ([]string, error) {
	if p == "" || p[0] != '/' || p == "/" {
		return nil, fmt.Errorf("mask %q: want a JSON pointer such as /arguments/password", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if s == "" {
			return nil, fmt.Errorf("mask %q: empty segment", p)
		}
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
	}
	return parts, nil
}

// OpenDecisionLog opens the decision log at path.
func OpenDecisionLog(path string, o DecisionLogOptions) (*DecisionLog, error) {
	l := &DecisionLog{labels: o.Labels}
	for _, m := range o.Mask {
		parts, err := ParsePointer(m)
		if err != nil {
			return nil, err
		}
		l.masks = append(l.masks, parts)
	}
	f, err := OpenFile(path, o.Rotation)
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, nil
}

// Log appends an entry for a decision: input and result are marshalled,
// the input masked.
func (l *DecisionLog) Log(e Entry, input, result any) error {
	in, erased, err := l.mask(input)
	if err != nil {
		return err
	}
	if e.Result, err = json.Marshal(result); err != nil {
		return err
	}
	e.Input, e.Erased = in, erased
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
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return l.f.WriteLine(b)
}

// mask marshals input with the masked paths erased. Without masks it is a
// single marshal.
func (l *DecisionLog) mask(input any) (json.RawMessage, []string, error) {
	b, err := json.Marshal(input)
	if err != nil || len(l.masks) == 0 {
		return b, nil, err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, err
	}
	var erased []string
	for _, m := range l.masks {
		erase(doc, m, "", &erased)
	}
	if len(erased) == 0 {
		return b, nil, nil
	}
	slices.Sort(erased)
	b, err = json.Marshal(doc)
	return b, erased, err
}

func erase(v any, path []string, at string, erased *[]string) {
	obj, ok := v.(map[string]any)
	if !ok || len(path) == 0 {
		return
	}
	keys := []string{path[0]}
	if path[0] == "*" {
		keys = keys[:0]
		for k := range obj {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		child, ok := obj[k]
		if !ok {
			continue
		}
		p := at + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
		if len(path) == 1 {
			delete(obj, k)
			*erased = append(*erased, p)
			continue
		}
		erase(child, path[1:], p, erased)
	}
}

// Close closes the file.
func (l *DecisionLog) Close() error { return l.f.Close() }
