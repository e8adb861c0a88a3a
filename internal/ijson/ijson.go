// Package ijson says what in a JSON text one reader could read otherwise
// than another: the harness decides on a call's arguments as Go's
// encoding/json reads them, and the tool that runs the call reads the
// text itself, with a parser of its own. Ambiguity finds the texts on
// which two such readers may disagree (see it for which), most of which
// I-JSON (RFC 7493) forbids, so that they can be refused before anything
// is decided on them. It also holds the scanning both the check and the
// gateway's own readers of raw JSON use.
package ijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// Ambiguity says why the valid JSON value b could be read by the upstream
// as other arguments than the ones the policy decided on, nil if it
// cannot be. The gateway forwards a call's arguments as the agent wrote
// them, and the policy decides on them as encoding/json reads them (keys
// exact, numbers as their exact decimal value), which settles what JSON's
// grammar leaves to each parser in a way other parsers do not:
//
//   - a key given twice in one object: encoding/json keeps the last
//     value; gjson, jsoniter's lazy API and many streaming parsers find
//     the first, and some refuse the object;
//   - two keys of one object that differ only in case ("path", "Path";
//     "keys", "Keyſ" under Unicode's folding; "file", "fıle" under its
//     full mappings): encoding/json (or code that upper-cases keys) reads
//     either into one field, the last one winning, where the policy sees
//     two keys;
//   - the key "__proto__": JavaScript's JSON.parse keeps it as a key, but
//     code that copies the arguments (Object.assign, most merges) makes
//     its value the prototype, whose keys the copy then answers for;
//   - a number more precise than a double, or beyond one ("1.0000000000000001",
//     "9007199254740993", "1e400"): the policy compares its exact
//     value, JavaScript, gjson and most upstreams its nearest double;
//   - bytes that are not UTF-8: encoding/json reads each as U+FFFD,
//     where another parser keeps the bytes (or its own replacement);
//   - a \u escape of half a UTF-16 surrogate pair: read as U+FFFD, where
//     JavaScript and Python keep the lone surrogate;
//   - \u0000 in a string: a tool that keeps strings as C does reads it as
//     their end.
//
// So an agent could have the policy see {"path": "notes.md"} while a
// first-wins or case-blind server writes the harness's own files. I-JSON
// (RFC 7493) forbids the duplicates, the numbers, the bytes and the
// surrogates; the keys in another case, "__proto__" and \u0000 are
// refused too, as no honest client needs them. A call that uses any is refused, never
// decided.
func Ambiguity(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("they are not UTF-8: the policy would read U+FFFD where the tool reads other bytes")
	}
	var outer [4]container // most arguments nest no deeper
	stack := outer[:0]
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) < cap(stack) {
				stack = stack[:len(stack)+1]
				f := &stack[len(stack)-1]
				f.object, f.keys, f.set, f.wantKey = c == '{', f.keys[:0], nil, c == '{'
			} else {
				stack = append(stack, container{object: c == '{', wantKey: c == '{'})
			}
			i++
		case c == '}' || c == ']':
			if len(stack) == 0 {
				return ErrMalformed
			}
			stack = stack[:len(stack)-1]
			i++
		case c == ',':
			if len(stack) == 0 {
				return ErrMalformed
			}
			if f := &stack[len(stack)-1]; f.object {
				f.wantKey = true
			}
			i++
		case c == '"':
			end, escaped, err := StringEnd(b, i)
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
					var s string
					if json.Unmarshal(b[i:end], &s) != nil {
						return ErrMalformed
					}
					key = []byte(s)
				}
				if string(key) == "__proto__" {
					return errors.New(`the key "__proto__" is refused: JavaScript code that copies the arguments (Object.assign) would take its value for their prototype, and the keys the policy did not see for theirs`)
				}
				if other, ok := f.has(key); ok {
					if bytes.Equal(other, key) {
						return fmt.Errorf("the key %.64q is given twice in one object: the policy would decide on one of its values and the tool could run with the other", string(key))
					}
					return fmt.Errorf("the keys %.64q and %.64q of one object differ only in case: a tool that reads keys without regard to case (encoding/json's struct fields) would take one for the other", string(other), string(key))
				}
			}
			i = end
		case c == '-' || '0' <= c && c <= '9':
			end := i + 1
			for end < len(b) && (b[end] >= '0' && b[end] <= '9' || b[end] == '.' || b[end] == 'e' || b[end] == 'E' || b[end] == '+' || b[end] == '-') {
				end++
			}
			if !doubleExact(b[i:end]) {
				return fmt.Errorf("the number %.64s is more precise than a double, or beyond one: the policy would compare its exact value, a tool (JavaScript's, and most others) its nearest double", string(b[i:end]))
			}
			i = end
		default:
			i++
		}
	}
	return nil
}

// container is an array or object that Ambiguity is within.
type container struct {
	object  bool
	keys    [][]byte          // the object's keys so far, unescaped
	set     map[string][]byte // the keys by their KeyForm, once there are many
	wantKey bool              // the next string is a key
}

// has returns a key of the object that is key in some case (see
// KeyForm), and adds key if there is none: a list while the object is
// small, a set once it is not (an agent chooses how many keys its
// arguments have). Keys all of ASCII are compared as they are, with no
// form made.
func (f *container) has(key []byte) ([]byte, bool) {
	const small = 16
	if f.set != nil {
		form := KeyForm(key)
		if k, ok := f.set[form]; ok {
			return k, true
		}
		f.set[form] = key
		return nil, false
	}
	wide := !isASCII(key)
	for _, k := range f.keys {
		if bytes.EqualFold(k, key) || (wide || !isASCII(k)) && KeyForm(k) == KeyForm(key) {
			return k, true
		}
	}
	if f.keys = append(f.keys, key); len(f.keys) > small {
		f.set = make(map[string][]byte, 2*len(f.keys))
		for _, k := range f.keys {
			f.set[KeyForm(k)] = k
		}
	}
	return nil, false
}

// KeyForm is the form in which two keys are equal when a reader that
// ignores case could take one for the other: encoding/json, by
// bytes.EqualFold's simple folding ("K", the Kelvin sign, for "k"); and
// code that upper-cases or case-folds whole strings, by Unicode's full
// mappings (JavaScript's toUpperCase, Python's casefold: "ß" for "ss",
// "ﬁ" for "fi", "ı" for "i"). A key of ASCII alone is only folded.
func KeyForm(s []byte) string {
	if isASCII(s) {
		return foldCase(s)
	}
	upper := cases.Upper(language.Und).Bytes(s) // a Caser keeps state: one a call
	return foldCase(cases.Fold().Bytes(upper))
}

func isASCII(s []byte) bool {
	for _, c := range s {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// foldCase is s with each character the least of those that are it in
// another case, so that foldCase(x) == foldCase(y) exactly when
// bytes.EqualFold(x, y): the keys encoding/json takes for one field.
func foldCase(s []byte) string {
	out := make([]byte, 0, len(s))
	for len(s) > 0 {
		if c := s[0]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			s = s[1:]
			continue
		}
		r, n := utf8.DecodeRune(s)
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			r = min(r, f)
		}
		out = utf8.AppendRune(out, r)
		s = s[n:]
	}
	return string(out)
}

// doubleExact reports whether the JSON number s is the value of the
// double nearest it written shortest: what a reader that holds numbers as
// doubles reads is then what the policy compares. A number of at most 15
// significant digits, from 1e-307 to below 1e308, always is (a normal
// double tells apart every two such numbers); one of more than 17 never is (no
// double needs more), nor one beyond a double's range or below 1e-307
// (near the subnormals, which strconv takes tens of microseconds to read:
// an agent would send a megabyte of them); the others are parsed from
// their significant digits and compared, as text, with the shortest
// writing of their double. A few hundred nanoseconds at most, however
// long s is.
func doubleExact(s []byte) bool {
	sig, mag := decimalShape(s)
	switch {
	case sig == 0: // a zero, whatever its exponent
		return true
	case sig <= 15 && -307 <= mag && mag <= 307:
		return true
	case sig > 17 || mag < -307 || mag > 308:
		return false
	}
	var buf [24]byte
	digits := buf[:0]
	for _, c := range s {
		if c == 'e' || c == 'E' || len(digits) == sig {
			break
		}
		if c < '0' || c > '9' || len(digits) == 0 && c == '0' {
			continue // the point, a sign, a leading zero
		}
		digits = append(digits, c)
	}
	text := strconv.AppendInt(append(append(make([]byte, 0, 32), digits...), 'e'), int64(mag-sig+1), 10)
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return false
	}
	// The shortest writing of f, as d.ddde±x: the same digits, and the
	// same power of ten for the first.
	short := strconv.AppendFloat(buf[:0:0], f, 'e', -1, 64)
	mantissa, exp, _ := bytes.Cut(short, []byte("e"))
	n, err := strconv.Atoi(string(exp))
	if err != nil || n != mag {
		return false
	}
	if len(mantissa) > 1 {
		mantissa = append(mantissa[:1:1], mantissa[2:]...) // without the point
	}
	return bytes.Equal(mantissa, digits)
}

// decimalShape reads the JSON number s: how many significant digits it
// has (from the first digit that is not 0 to the last) and the power of
// ten of the first (an exponent past 10^15, far beyond what the digits of
// any message could bring back, read as 10^15).
func decimalShape(s []byte) (sig, mag int) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	first, last, point := -1, -1, -1 // positions among the digits of the mantissa
	digits := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			point = digits
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		if c != '0' {
			if first < 0 {
				first = digits
			}
			last = digits
		}
		digits++
	}
	if point < 0 {
		point = digits
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		for ; i < len(s); i++ {
			if exp = exp*10 + int(s[i]-'0'); exp > 1e15 {
				exp = 1e15 // far beyond a double either way: no need to read on
				break
			}
		}
		if neg {
			exp = -exp
		}
	}
	if first < 0 {
		return 0, 0
	}
	return last - first + 1, point - first - 1 + exp
}

// surrogates reports a \u escape in the inside of a JSON string that is
// half of a UTF-16 surrogate pair (a high half not followed by a low one,
// or a low half on its own), or \u0000.
func surrogates(s []byte) error {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(s) || s[i] != 'u' {
			continue
		}
		r, ok := Hex4(s[i+1:])
		if !ok {
			return ErrMalformed
		}
		i += 4
		if r == 0 {
			return errors.New(`a string holds \u0000: a tool that keeps strings as C does would end it there, where the policy reads on ("/etc/passwd\u0000.md")`)
		}
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r < 0xdc00 && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
			if r2, ok := Hex4(s[i+3:]); ok && 0xdc00 <= r2 && r2 <= 0xdfff {
				i += 6
				continue
			}
		}
		return fmt.Errorf(`a string holds \u%04x, half of a UTF-16 surrogate pair: the policy would read U+FFFD where the tool may keep it`, r)
	}
	return nil
}
