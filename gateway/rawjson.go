package gateway

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/agentharness/harness/internal/ijson"
)

// A result is read for charging in a single pass over its bytes, without
// copying them: encoding/json would check the whole of it again at each
// level (the result, its content, each block, each text) and copy what it
// keeps, which took a 100 KB result several milliseconds. The result was
// checked once already, with the message it came in, so these functions
// read JSON that is valid; on anything else they return an error or
// nothing, never more than is there. Keys are unescaped and compared as
// they are spelled, and of a key given twice the last counts, as a
// JavaScript client reads them.

var errJSON = ijson.ErrMalformed

// objectMembers are the members of a JSON object by key, each value a
// slice of raw; nil, and no error, for null.
func objectMembers(raw []byte) (map[string]json.RawMessage, error) {
	m, _, err := objectMembersN(raw)
	return m, err
}

// objectMembersN is objectMembers, and how many members the object has,
// counting every one of a key given twice.
func objectMembersN(raw []byte) (map[string]json.RawMessage, int, error) {
	n := 0
	i := skipSpace(raw, 0)
	if bytes.HasPrefix(raw[i:], []byte("null")) {
		return nil, 0, nil
	}
	if i >= len(raw) || raw[i] != '{' {
		return nil, 0, errJSON
	}
	out := map[string]json.RawMessage{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return out, n, nil
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return nil, 0, errJSON
		}
		end, escaped, err := ijson.StringEnd(raw, i)
		if err != nil {
			return nil, 0, err
		}
		key := string(raw[i+1 : end-1])
		if escaped || !utf8.ValidString(key) {
			if json.Unmarshal(raw[i:end], &key) != nil {
				return nil, 0, errJSON
			}
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, 0, errJSON
		}
		start := skipSpace(raw, i+1)
		if end, err = skipValue(raw, start); err != nil {
			return nil, 0, err
		}
		out[key] = raw[start:end:end]
		n++
		i = skipSpace(raw, end)
		switch {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			return out, n, nil
		default:
			return nil, 0, errJSON
		}
	}
	return nil, 0, errJSON
}

// arrayElements are the elements of a JSON array, each a slice of raw;
// nil, and no error, for null.
func arrayElements(raw []byte) ([]json.RawMessage, error) {
	i := skipSpace(raw, 0)
	if bytes.HasPrefix(raw[i:], []byte("null")) {
		return nil, nil
	}
	if i >= len(raw) || raw[i] != '[' {
		return nil, errJSON
	}
	out := []json.RawMessage{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return out, nil
	}
	for i < len(raw) {
		end, err := skipValue(raw, i)
		if err != nil {
			return nil, err
		}
		out = append(out, raw[i:end:end])
		i = skipSpace(raw, end)
		switch {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == ']':
			return out, nil
		default:
			return nil, errJSON
		}
	}
	return nil, errJSON
}

// stringValue is the string a JSON value holds; "" for any other value.
// It is decoded as encoding/json decodes it: invalid UTF-8 and unpaired
// surrogates become U+FFFD (FuzzUnquote holds the two equal).
func stringValue(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return ""
	}
	if s, ok := unquote(raw[1 : len(raw)-1]); ok {
		return s
	}
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// unquote decodes the inside of a JSON string in one pass: the runs
// between escapes are found eight bytes at a time and copied whole
// (checked for UTF-8 only when they hold a byte outside ASCII), each
// escape decoded. It reports false for what a JSON string may not hold (a
// quote or a control character not escaped, an escape of another kind).
// The string it returns is the buffer it decoded into, which nothing else
// holds: a result's text is copied once, not twice.
func unquote(s []byte) (string, bool) {
	const highs = 0x8080808080808080
	b := make([]byte, 0, len(s))
	for len(s) > 0 {
		i, high := 0, uint64(0)
		for i+8 <= len(s) {
			w := binary.LittleEndian.Uint64(s[i:])
			if m := specialBits(w); m != 0 {
				n := bits.TrailingZeros64(m) / 8 // bytes before the first special one
				high |= w & (1<<(8*n) - 1)
				i += n
				break
			}
			high |= w
			i += 8
		}
		if i+8 > len(s) { // the last bytes
			for i < len(s) && s[i] != '\\' && s[i] != '"' && s[i] >= ' ' {
				high |= uint64(s[i])
				i++
			}
		}
		run := s[:i]
		if high&highs == 0 || utf8.Valid(run) {
			b = append(b, run...)
		} else {
			for len(run) > 0 {
				r, size := utf8.DecodeRune(run)
				b = utf8.AppendRune(b, r)
				run = run[size:]
			}
		}
		s = s[i:]
		if len(s) == 0 {
			break
		}
		if len(s) < 2 || s[0] != '\\' {
			return "", false // a quote or a control character
		}
		switch c := s[1]; c {
		case '"', '\\', '/':
			b = append(b, c)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := ijson.Hex4(s[2:])
			if !ok {
				return "", false
			}
			s = s[6:]
			if utf16.IsSurrogate(r) {
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					if r2, ok := ijson.Hex4(s[2:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							s = s[6:]
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			return "", false
		}
		s = s[2:]
	}
	if len(b) == 0 {
		return "", true
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), true // b is not written after, nor kept
}

// hasControl reports whether b holds a control character (below ' ').
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < ' ' {
			return true
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue is the end of the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch b[i] {
	case '"':
		end, _, err := ijson.StringEnd(b, i)
		return end, err
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				end, _, err := ijson.StringEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
			j++
		}
		return 0, errJSON
	}
	j := i // a number, true, false or null
scan:
	for ; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			break scan
		}
	}
	if j == i {
		return 0, errJSON
	}
	return j, nil
}
