package hookclient

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// A hook process is new for every call, and encoding/json's first use of
// a type in a process (its reflection, its cached encoder) cost about a
// tenth of a millisecond, a tenth of what the hook adds to a bare
// process. A request is a few strings and the payload, so it is written
// here by hand, byte for byte as json.Encoder writes it
// (TestEncodeRequestAsEncodingJSON, FuzzEncodeRequest hold it to that).

// appendRequest appends req as json.Encoder encodes it, newline and all.
// The payload must be valid JSON (Call checks): it is compacted and its
// strings escaped for HTML, as encoding/json does a RawMessage.
func appendRequest(b []byte, req Request) []byte {
	b = append(b, `{"payload":`...)
	if req.Payload == nil {
		b = append(b, "null"...)
	} else {
		var compact bytes.Buffer
		if err := json.Compact(&compact, req.Payload); err != nil {
			return nil
		}
		var escaped bytes.Buffer
		json.HTMLEscape(&escaped, compact.Bytes())
		b = append(b, escaped.Bytes()...)
	}
	b = append(b, `,"project":`...)
	b = appendString(b, req.Project)
	b = append(b, `,"work_dir":`...)
	b = appendString(b, req.WorkDir)
	b = append(b, `,"env":`...)
	if req.Env == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		keys := make([]string, 0, len(req.Env))
		for k := range req.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, req.Env[k])
		}
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string as encoding/json writes it with
// HTML escaping: <, > and & as \u escapes, U+2028 and U+2029 escaped, and
// each byte of invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
