package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// ambiguity says why the valid JSON value b could be read by the upstream
// as other arguments than the ones the policy decided on, nil if it
// cannot be. The gateway forwards a call's arguments as the agent wrote
// them, and the policy decides on them as encoding/json reads them, which
// settles three things that JSON's own grammar leaves open in its own way:
//
//   - a key given twice in one object: encoding/json keeps the last
//     value; gjson, jsoniter's lazy API and many streaming parsers find
//     the first, and some refuse the object;
//   - bytes that are not UTF-8: encoding/json reads each as U+FFFD,
//     where another parser keeps the bytes (or its own replacement);
//   - a \u escape of half a UTF-16 surrogate pair: read as U+FFFD, where
//     JavaScript and Python keep the lone surrogate.
//
// So an agent could have the policy see {"path": "notes.md"} while a
// first-wins server writes the harness's own files. RFC 8259 leaves the
// first two to the parser (names SHOULD be unique; the text SHALL be
// UTF-8), and I-JSON (RFC 7493) forbids all three: a call that uses any
// of them is refused, never decided.
func ambiguity(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("they are not UTF-8: the policy would read U+FFFD where the tool reads other bytes")
	}
	var stack []container
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) < cap(stack) {
				stack = stack[:len(stack)+1]
				f := &stack[len(stack)-1]
				f.object, f.keys, f.set, f.wantKey = c == '{', f.keys[:0], nil, c == '{'
			} else {
				stack = append(stack, container{object: c == '{', wantKey: c == '{'})
			}
			i++
		case '}', ']':
			if len(stack) == 0 {
				return errJSON
			}
			stack = stack[:len(stack)-1]
			i++
		case ',':
			if len(stack) == 0 {
				return errJSON
			}
			if f := &stack[len(stack)-1]; f.object {
				f.wantKey = true
			}
			i++
		case '"':
			end, escaped, err := stringEnd(b, i)
			if err != nil {
				return err
			}
			inside := b[i+1 : end-1]
			if escaped {
				if err := surrogates(inside); err != nil {
					return err
				}
			}
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				f := &stack[n-1]
				f.wantKey = false
				key := inside
				if escaped {
					s, ok := unquote(inside)
					if !ok {
						return errJSON
					}
					key = []byte(s)
				}
				if f.has(key) {
					return fmt.Errorf("the key %q is given twice in one object: the policy would decide on one of its values and the tool could run with the other", key)
				}
			}
			i = end
		default:
			i++
		}
	}
	return nil
}

// container is an array or object that ambiguity is within.
type container struct {
	object  bool
	keys    [][]byte            // the object's keys so far, unescaped
	set     map[string]struct{} // the keys, once there are many
	wantKey bool                // the next string is a key
}

// has reports whether the object's keys hold key, and adds it if not: a
// list while the object is small, a set once it is not (an agent chooses
// how many keys its arguments have).
func (f *container) has(key []byte) bool {
	const small = 16
	if f.set != nil {
		if _, ok := f.set[string(key)]; ok {
			return true
		}
		f.set[string(key)] = struct{}{}
		return false
	}
	for _, k := range f.keys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	if f.keys = append(f.keys, key); len(f.keys) > small {
		f.set = make(map[string]struct{}, 2*len(f.keys))
		for _, k := range f.keys {
			f.set[string(k)] = struct{}{}
		}
	}
	return false
}

// surrogates reports a \u escape in the inside of a JSON string that is
// half of a UTF-16 surrogate pair: a high half not followed by a low one,
// or a low half on its own.
func surrogates(s []byte) error {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(s) || s[i] != 'u' {
			continue
		}
		r, ok := hex4(s[i+1:])
		if !ok {
			return errJSON
		}
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r < 0xdc00 && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
			if r2, ok := hex4(s[i+3:]); ok && 0xdc00 <= r2 && r2 <= 0xdfff {
				i += 6
				continue
			}
		}
		return fmt.Errorf(`a string holds \u%04x, half of a UTF-16 surrogate pair: the policy would read U+FFFD where the tool may keep it`, r)
	}
	return nil
}
