package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
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

var errJSON = errors.New("malformed JSON")

// objectMembers are the members of a JSON object by key, each value a
// slice of raw; nil, and no error, for null.
func objectMembers(raw []byte) (map[string]json.RawMessage, error) {
	i := skipSpace(raw, 0)
	if bytes.HasPrefix(raw[i:], []byte("null")) {
		return nil, nil
	}
	if i >= len(raw) || raw[i] != '{' {
		return nil, errJSON
	}
	out := map[string]json.RawMessage{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return out, nil
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return nil, errJSON
		}
		end, escaped, err := stringEnd(raw, i)
		if err != nil {
			return nil, err
		}
		key := string(raw[i+1 : end-1])
		if escaped || !utf8.ValidString(key) {
			if json.Unmarshal(raw[i:end], &key) != nil {
				return nil, errJSON
			}
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, errJSON
		}
		start := skipSpace(raw, i+1)
		if end, err = skipValue(raw, start); err != nil {
			return nil, err
		}
		out[key] = raw[start:end:end]
		i = skipSpace(raw, end)
		switch {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			return out, nil
		default:
			return nil, errJSON
		}
	}
	return nil, errJSON
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
// A string without escapes, in valid UTF-8, is taken as it is; any other
// is decoded by encoding/json (invalid UTF-8 becomes U+FFFD, as it did).
func stringValue(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	json.Unmarshal(raw, &s)
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the end of the string that starts at b[i] (a quote), and
// whether it has escapes.
func stringEnd(b []byte, i int) (end int, escaped bool, err error) {
	for j := i + 1; j < len(b); {
		k := bytes.IndexAny(b[j:], "\"\\")
		if k < 0 {
			break
		}
		j += k
		if b[j] == '"' {
			return j + 1, escaped, nil
		}
		escaped = true
		j += 2 // the backslash and the character it escapes (\uXXXX: its hex digits are no quote)
	}
	return 0, false, errJSON
}

// skipValue is the end of the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch b[i] {
	case '"':
		end, _, err := stringEnd(b, i)
		return end, err
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				end, _, err := stringEnd(b, j)
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
