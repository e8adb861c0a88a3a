package ijson

import (
	"bytes"
	"errors"
)

// ErrMalformed is the error of text that is not the JSON it should be.
var ErrMalformed = errors.New("malformed JSON")

// StringEnd is the end of the string that starts at b[i] (a quote), and
// whether it has escapes: at the first quote after it that an even number
// of backslashes comes before (each pair of them is an escaped backslash).
// Quotes and backslashes are looked for with bytes.IndexByte, which goes
// through text many bytes at a time: a text of 100 KB with a line break
// (\n) on every line was read escape by escape before.
func StringEnd(b []byte, i int) (end int, escaped bool, err error) {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		if !escaped && bytes.IndexByte(b[j:q], '\\') >= 0 {
			escaped = true
		}
		n := 0
		for q-1-n > i && b[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q + 1, escaped, nil
		}
		j = q + 1 // an escaped quote
	}
	return 0, false, ErrMalformed
}

// Hex4 reads the four hexadecimal digits at the start of b.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
