package strict

import (
	"fmt"
	"slices"
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
// tables of an array of tables are numbered from 1 ("upstream[2].name"),
// and their keys are recorded under that name too (without it, a key is
// where the first table has it).
//
// It only serves error messages, and it runs after the TOML parser accepted
// the document, so it never has to report syntax errors itself.
type Positions map[string]Pos

func KeyPositions(src string) Positions {
	p := Positions{}
	record := func(key string, at Pos) {
		if _, seen := p[key]; !seen && key != "" {
			p[key] = at
		}
	}
	var prefix, numbered []string // numbered: the prefix with the table's number, in an array of tables
	arrays := map[string]int{}    // tables seen of each array of tables
	var v valueScanner            // state of a value that continues on the next lines
	for i, line := range strings.Split(src, "\n") {
		if v.open() {
			v.scan(line)
			continue
		}
		trimmed := strings.TrimLeft(line, " \t")
		at := Pos{i + 1, len(line) - len(trimmed) + 1}
		switch {
		case trimmed == "" || trimmed[0] == '#':
			continue
		case strings.HasPrefix(trimmed, "[["):
			prefix, numbered = splitKey(headerName(trimmed[2:], "]]")), nil
			if len(prefix) > 0 {
				name := strings.Join(prefix, ".")
				arrays[name]++
				numbered = slices.Clone(prefix)
				numbered[len(numbered)-1] += fmt.Sprintf("[%d]", arrays[name])
			}
		case trimmed[0] == '[':
			prefix, numbered = splitKey(headerName(trimmed[1:], "]")), nil
		default:
			eq := keyEnd(trimmed)
			if eq < 0 {
				continue
			}
			key := splitKey(trimmed[:eq])
			record(strings.Join(append(slices.Clone(prefix), key...), "."), at)
			if numbered != nil {
				record(strings.Join(append(slices.Clone(numbered), key...), "."), at)
			}
			v.scan(trimmed[eq+1:])
			continue
		}
		record(strings.Join(prefix, "."), at)
		record(strings.Join(numbered, "."), at)
	}
	return p
}

// Of returns the position of key; else of the first key below it (a table
// that no line defines, such as [cost.models] of [cost.models.x]); else
// the same of its closest enclosing key; else the zero pos.
func (p Positions) Of(key string) Pos {
	for key != "" {
		if at, ok := p[key]; ok {
			return at
		}
		if at := p.firstBelow(key); at.Line > 0 {
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

// firstBelow is the position of the first key inside key.
func (p Positions) firstBelow(key string) Pos {
	var first Pos
	for k, at := range p {
		if rest, ok := strings.CutPrefix(k, key); ok && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "[")) && before(at, first) {
			first = at
		}
	}
	return first
}

// before reports whether a comes before b, the zero pos coming last.
func before(a, b Pos) bool {
	return b.Line == 0 || a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
}

// First returns the position of the first key or table of the document,
// or the zero pos when it has none.
func (p Positions) First() Pos {
	var first Pos
	for _, at := range p {
		if before(at, first) {
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
