package strict

import (
	"strconv"
	"strings"
)

// Pos is a 1-based line and column in a source file.
type Pos struct{ Line, Col int }

// KeyPositions finds where each key of a TOML document is defined, keyed by its
// dotted path ("limits.max_cost_usd", "tools"). BurntSushi/toml keeps key
// positions private, so this is a small scanner of its own: it understands
// table headers, bare, quoted and dotted keys, comments, and values that span
// lines (arrays, inline tables, multi-line strings). Keys inside inline tables
// are not recorded; [Positions.Of] falls back to the enclosing key. The
// tables of an array of tables are also recorded by their number, from 1:
// the second [[alerts]] is "alerts.2", its url "alerts.2.url".
//
// It only serves error messages, and it runs after the TOML parser accepted
// the document, so it never has to report syntax errors itself.
type Positions map[string]Pos

func KeyPositions(src string) Positions {
	p := Positions{}
	var prefix, indexed []string
	arrays := map[string]int{} // the tables of each array of tables so far
	var v valueScanner         // state of a value that continues on the next lines
	record := func(key []string, at Pos) {
		if _, seen := p[strings.Join(key, ".")]; !seen {
			p[strings.Join(key, ".")] = at
		}
	}
	for i, line := range strings.Split(src, "\n") {
		if v.open() {
			v.scan(line)
			continue
		}
		trimmed := strings.TrimLeft(line, " \t")
		col := len(line) - len(trimmed) + 1
		switch {
		case trimmed == "" || trimmed[0] == '#':
			continue
		case strings.HasPrefix(trimmed, "[["):
			prefix = splitKey(headerName(trimmed[2:], "]]"))
			name := strings.Join(prefix, ".")
			arrays[name]++
			indexed = append(append([]string{}, prefix...), strconv.Itoa(arrays[name]))
			record(indexed, Pos{i + 1, col})
		case trimmed[0] == '[':
			prefix, indexed = splitKey(headerName(trimmed[1:], "]")), nil
		default:
			eq := keyEnd(trimmed)
			if eq < 0 {
				continue
			}
			key := splitKey(trimmed[:eq])
			record(append(append([]string{}, prefix...), key...), Pos{i + 1, col})
			if indexed != nil {
				record(append(append([]string{}, indexed...), key...), Pos{i + 1, col})
			}
			v.scan(trimmed[eq+1:])
			continue
		}
		if len(prefix) > 0 {
			record(prefix, Pos{i + 1, col})
		}
	}
	return p
}

// Of returns the position of key, or of its closest enclosing key that was
// found, or the zero pos.
func (p Positions) Of(key string) Pos {
	for key != "" {
		if at, ok := p[key]; ok {
			return at
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return Pos{}
}

// First returns the position of the first key or table of the document,
// or the zero pos when it has none.
func (p Positions) First() Pos {
	var first Pos
	for _, at := range p {
		if first.Line == 0 || at.Line < first.Line || at.Line == first.Line && at.Col < first.Col {
			first = at
		}
	}
	return first
}

// headerName returns the table name of a header line, without the closing
// bracket(s) and any trailing comment.
func headerName(s, closing string) string {
	if i := strings.Index(s, closing); i >= 0 {
		s = s[:i]
	}
	return s
}

// keyEnd returns the index of the '=' that ends the key at the start of s, or -1.
func keyEnd(s string) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '=':
			return i
		case c == '#':
			return -1
		}
	}
	return -1
}

// splitKey splits a dotted TOML key into its parts, unquoting quoted parts.
func splitKey(s string) []string {
	var parts []string
	var cur strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '.':
			parts = append(parts, cur.String())
			cur.Reset()
		case c == ' ' || c == '\t':
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, cur.String())
}

// valueScanner follows a TOML value across lines: open brackets and braces,
// and multi-line strings.
type valueScanner struct {
	depth  int    // open [ and {
	triple string // `"""` or `'''` while inside a multi-line string
}

func (v *valueScanner) open() bool { return v.depth > 0 || v.triple != "" }

func (v *valueScanner) scan(s string) {
	for i := 0; i < len(s); i++ {
		if v.triple != "" {
			j := strings.Index(s[i:], v.triple)
			if j < 0 {
				return
			}
			i += j + 2
			v.triple = ""
			continue
		}
		switch c := s[i]; c {
		case '#':
			return
		case '[', '{':
			v.depth++
		case ']', '}':
			v.depth--
		case '"', '\'':
			if strings.HasPrefix(s[i:], strings.Repeat(string(c), 3)) {
				v.triple = strings.Repeat(string(c), 3)
				i += 2
				continue
			}
			// A one-line string: skip to its closing quote.
			for i++; i < len(s) && s[i] != c; i++ {
				if c == '"' && s[i] == '\\' {
					i++
				}
			}
		}
	}
}
