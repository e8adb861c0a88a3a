package gateway

import (
	"bytes"
	"encoding/binary"

	"github.com/agentharness/harness/internal/ijson"
)

// validJSON reports whether b is one JSON value, as json.Valid does
// (FuzzValidJSON holds the two equal), several times faster on the text
// that makes up most of a large message: a string is crossed eight bytes
// at a time to its next quote, backslash or control character, where
// encoding/json's scanner takes each byte through a state function. Like
// json.Valid it does not check that strings are UTF-8, and it refuses
// more than 10,000 nested arrays and objects.
func validJSON(b []byte) bool {
	const maxDepth = 10000
	var stack []byte // the open containers, '{' or '['
	i := skipSpace(b, 0)
	for {
		// A value at b[i].
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxDepth {
				return false
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			if i < len(b) && (c == '{' && b[i] == '}' || c == '[' && b[i] == ']') {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = objectKey(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = stringValid(b, i); i < 0 {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			if i = numberValid(b, i); i < 0 {
				return false
			}
		case bytes.HasPrefix(b[i:], []byte("true")):
			i += 4
		case bytes.HasPrefix(b[i:], []byte("false")):
			i += 5
		case bytes.HasPrefix(b[i:], []byte("null")):
			i += 4
		default:
			return false
		}
		// After a value: the next of its container, or its end.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			switch {
			case b[i] == ',':
				i = skipSpace(b, i+1)
				if top == '{' {
					if i = objectKey(b, i); i < 0 {
						return false
					}
				}
			case top == '{' && b[i] == '}' || top == '[' && b[i] == ']':
				stack = stack[:len(stack)-1]
				i++
				continue
			default:
				return false
			}
			break
		}
	}
}

// objectKey checks the key and colon of an object's member at b[i] and
// returns where its value starts, -1 if they are not there.
func objectKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = stringValid(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// stringValid checks the string at b[i] (a quote) and returns where it
// ends, -1 if it is not a JSON string.
func stringValid(b []byte, i int) int {
	for i++; i < len(b); {
		// Eight bytes at a time while none is a quote, a backslash or a
		// control character.
		for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < ' ':
			return -1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := ijson.Hex4(b[i+2:]); !ok {
					return -1
				}
				i += 6
			default:
				return -1
			}
		default:
			i++
		}
	}
	return -1
}

// special reports whether one of the eight bytes of x is a quote, a
// backslash or below ' ' (bytes from 0x80 are none of them).
func special(x uint64) bool { return specialBits(x) != 0 }

// specialBits has the high bit of each byte of x that is a quote, a
// backslash or below ' ' set, and perhaps of bytes after the first such
// byte (a borrow runs on upward), never of one before it: its lowest bit
// set is the first special byte's.
func specialBits(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	below := (x - ones*' ') & ^x & highs
	return hasZero(x^(ones*'"')) | hasZero(x^(ones*'\\')) | below
}

// numberValid checks the number at b[i] and returns where it ends, -1 if
// it is not a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberValid(b []byte, i int) int {
	digits := func(j int) int {
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(i + 1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}
