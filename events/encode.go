package events

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
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
	dst = append(dst, `{"decision_id":`...)
	dst = appendString(dst, e.DecisionID)
	if len(e.Labels) > 0 {
		dst = append(dst, `,"labels":{`...)
		for i, k := range slices.Sorted(maps.Keys(e.Labels)) {
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
		for i, k := range slices.Sorted(maps.Keys(e.Bundles)) {
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
		for i, k := range slices.Sorted(maps.Keys(e.Metrics)) {
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

// appendString appends s as a JSON string as encoding/json writes one: the
// HTML characters <, > and & escaped, as are U+2028 and U+2029; control
// characters as \b, \f, \n, \r, \t or \u00XX; each byte that is not part
// of valid UTF-8 replaced by U+FFFD.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}

// marshalEntry is e's line: appendEntry, or json.Marshal where it cannot.
func marshalEntry(e *Entry) ([]byte, error) {
	if b, ok := appendEntry(make([]byte, 0, 512+len(e.Input)+len(e.Result)), e); ok {
		return b, nil
	}
	return json.Marshal(e)
}
