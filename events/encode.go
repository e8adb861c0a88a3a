package events

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/jsonstr"
)

// appendEntry appends e's JSON to dst, byte for byte what json.Marshal
// writes for it, without reflection: a decision-log line is written for
// every call, and encoding/json spent more on one than the policy did on
// deciding it. e.Input and e.Result are appended as they are, so they must
// be what json.Marshal wrote (compact, valid, HTML characters escaped), as
// Log's always are; ok is false when e holds what only json.Marshal can
// judge (a timestamp whose year has not four digits or whose zone is a day or
// more away from UTC, which it refuses).
// TestAppendEntryIsMarshal and FuzzAppendEntry hold the two equal.
func appendEntry(dst []byte, e *Entry) (out []byte, ok bool) {
	if y := e.Timestamp.Year(); y < 0 || y > 9999 {
		return dst, false
	}
	if _, off := e.Timestamp.Zone(); off <= -24*3600 || off >= 24*3600 {
		return dst, false
	}
	var keys [8]string
	dst = append(dst, `{"decision_id":`...)
	dst = appendString(dst, e.DecisionID)
	if len(e.Labels) > 0 {
		dst = append(dst, `,"labels":{`...)
		for i, k := range sortedKeys(keys[:0], e.Labels) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendString(dst, k), ':')
			dst = appendString(dst, e.Labels[k])
		}
		dst = append(dst, '}')
	}
	if len(e.Bundles) > 0 {
		dst = append(dst, `,"bundles":{`...)
		for i, k := range sortedKeys(keys[:0], e.Bundles) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendString(dst, k), ":{"...)
			if r := e.Bundles[k].Revision; r != "" {
				dst = appendString(append(dst, `"revision":`...), r)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	dst = appendString(append(dst, `,"path":`...), e.Path)
	if len(e.Input) > 0 {
		dst = append(append(dst, `,"input":`...), e.Input...)
	}
	if len(e.Result) > 0 {
		dst = append(append(dst, `,"result":`...), e.Result...)
	}
	dst = append(dst, `,"timestamp":"`...)
	dst = append(e.Timestamp.AppendFormat(dst, time.RFC3339Nano), '"')
	if len(e.Metrics) > 0 {
		dst = append(dst, `,"metrics":{`...)
		for i, k := range sortedKeys(keys[:0], e.Metrics) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendString(dst, k), ':')
			dst = strconv.AppendInt(dst, e.Metrics[k], 10)
		}
		dst = append(dst, '}')
	}
	for _, l := range []struct {
		name string
		list []string
	}{{`,"erased":[`, e.Erased}, {`,"masked":[`, e.Masked}} {
		if len(l.list) == 0 {
			continue
		}
		dst = append(dst, l.name...)
		for i, s := range l.list {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, s)
		}
		dst = append(dst, ']')
	}
	if c := e.Custom; c != nil {
		dst = append(dst, `,"custom":{`...)
		n := len(dst)
		if c.Shadow {
			dst = append(dst, `"shadow":true`...)
		}
		for _, f := range []struct{ name, value string }{{`"cost_source":`, c.CostSource}, {`"approved_by":`, c.ApprovedBy}} {
			if f.value != "" {
				if len(dst) > n {
					dst = append(dst, ',')
				}
				dst = appendString(append(dst, f.name...), f.value)
			}
		}
		if c.Shell != 0 {
			if len(dst) > n {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(append(dst, `"shell":`...), c.Shell, 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), true
}

// appendString appends s as a JSON string, as encoding/json writes one.
func appendString(dst []byte, s string) []byte { return jsonstr.Append(dst, s) }

// marshalEntry is e's line: appendEntry, or json.Marshal where it cannot.
func marshalEntry(e *Entry) ([]byte, error) {
	if b, ok := appendEntry(make([]byte, 0, 512+len(e.Input)+len(e.Result)), e); ok {
		return b, nil
	}
	return json.Marshal(e)
}

// sortedKeys are m's keys, sorted, in buf's array when they fit: the
// order in which json.Marshal writes a map's members.
func sortedKeys[V any](buf []string, m map[string]V) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

// maxDepth is how deeply nested a value appendValue writes; a deeper one
// is left to json.Marshal.
const maxDepth = 256

// CallInput is a call's input as its decision's log line holds it: the
// input the policy saw, with the shell policy the engine filled in.
type CallInput struct {
	contract.Input
	ShellPolicy string `json:"shell_policy"`
}

// marshalInput is input's JSON, byte for byte json.Marshal's: a call's
// input (a CallInput, or a contract.Input) written without reflection
// (appendInput), anything else by json.Marshal.
func marshalInput(input any) ([]byte, error) {
	var b []byte
	ok := false
	switch in := input.(type) {
	case CallInput:
		if b, ok = appendInput(make([]byte, 0, 256), &in.Input); ok {
			b = append(appendString(append(b[:len(b)-1], `,"shell_policy":`...), in.ShellPolicy), '}')
		}
	case contract.Input:
		b, ok = appendInput(make([]byte, 0, 256), &in)
	}
	if ok {
		return b, nil
	}
	return json.Marshal(input)
}

// appendInput appends in's JSON as json.Marshal writes it; ok is false
// when its arguments hold what appendValue leaves to json.Marshal, or it
// has paths resolved (an edit's, seldom: json.Marshal writes them).
// TestAppendInputIsMarshal and FuzzAppendInput hold the two equal.
func appendInput(dst []byte, in *contract.Input) (out []byte, ok bool) {
	if len(in.Resolved) > 0 {
		return dst, false
	}
	dst = appendString(append(dst, `{"role":`...), in.Role)
	dst = appendString(append(dst, `,"tool":`...), in.Tool)
	dst = appendString(append(dst, `,"upstream":`...), in.Upstream)
	dst = appendString(append(dst, `,"upstream_tool":`...), in.UpstreamTool)
	if dst, ok = appendValue(append(dst, `,"arguments":`...), in.Arguments, 0); !ok {
		return dst, false
	}
	dst = appendUsage(append(dst, `,"budget":`...), in.Budget)
	if in.AgentBudget != nil {
		dst = appendUsage(append(dst, `,"agent_budget":`...), *in.AgentBudget)
	}
	dst = appendString(append(dst, `,"session":`...), in.Session)
	dst = appendString(append(dst, `,"agent":`...), in.Agent)
	dst = appendString(append(dst, `,"project":`...), in.Project)
	return append(dst, '}'), true
}

func appendUsage(dst []byte, u contract.Usage) []byte {
	dst = strconv.AppendInt(append(dst, `{"tokens":`...), u.Tokens, 10)
	dst = strconv.AppendInt(append(dst, `,"shell":`...), u.Shell, 10)
	dst = strconv.AppendInt(append(dst, `,"cost_micros":`...), u.CostMicros, 10)
	return append(dst, '}')
}

// appendValue appends v, a value as a JSON decoder makes one (nil, bool,
// string, float64, json.Number, map[string]any, []any; integers too), as
// json.Marshal writes it. ok is false for anything else, a value nested
// deeper than maxDepth, and what json.Marshal refuses (NaN, infinities,
// a json.Number that is not a number).
func appendValue(dst []byte, v any, depth int) (out []byte, ok bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case string:
		return appendString(dst, v), true
	case json.Number:
		s := string(v)
		if s == "" {
			s = "0"
		}
		return append(dst, s...), validNumber(s)
	case float64:
		return appendFloat(dst, v)
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), true
		}
		if depth >= maxDepth {
			return dst, false
		}
		dst = append(dst, '{')
		var buf [16]string
		for i, k := range sortedKeys(buf[:0], v) {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendValue(append(appendString(dst, k), ':'), v[k], depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		if depth >= maxDepth {
			return dst, false
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendValue(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// appendFloat appends f as json.Marshal writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21
// on (its exponent without a leading zero); false for NaN and infinities,
// which it refuses.
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-07 is written e-7
		dst = dst[:n-1]
	}
	return dst, true
}

// validNumber reports whether s is a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
