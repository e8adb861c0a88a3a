package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// jsonDoc is a JSON text edited in place: a change replaces or inserts the
// bytes of one value and leaves every other byte as it was, so a settings
// file keeps its key order, its indentation, its spacing and its final
// newline. Each change parses the text again (settings files are small).
type jsonDoc struct {
	src     []byte
	root    *jsonNode
	unit    string // one level of indentation, as the file has it
	newline string // "\n", or "\r\n" in a file that ends its lines so
}

// jsonNode is one value of the text: its kind ('{', '[', '"', or 'v' for
// a number, true, false and null) and its bytes src[start:end]; an
// object's members in order (keys and values), an array's elements.
type jsonNode struct {
	kind       byte
	start, end int
	keys       []string
	keyStarts  []int
	kids       []*jsonNode
	str        string // a string's value
}

// parseJSONDoc reads a JSON text.
func parseJSONDoc(src []byte) (*jsonDoc, error) {
	if !json.Valid(src) {
		var v any
		err := json.Unmarshal(src, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, err
	}
	p := &jsonParser{src: src}
	root := p.value()
	if p.err != nil {
		return nil, p.err
	}
	d := &jsonDoc{src: src, root: root, newline: "\n"}
	d.unit = d.indentUnit()
	if bytes.Contains(src, []byte("\r\n")) {
		d.newline = "\r\n"
	}
	return d, nil
}

// get is the value at the object keys path, nil if there is none.
func (d *jsonDoc) get(path ...string) *jsonNode {
	n := d.root
	for _, k := range path {
		n = n.member(k)
		if n == nil {
			return nil
		}
	}
	return n
}

// member is the value of key in an object, nil if it has none.
func (n *jsonNode) member(key string) *jsonNode {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.kids[i]
		}
	}
	return nil
}

// replace puts v in the place of n.
func (d *jsonDoc) replace(n *jsonNode, v any) error {
	b, err := d.render(v, "")
	if err != nil {
		return err
	}
	return d.splice(n.start, n.end, b)
}

// insert adds key: v as the last member of the object obj.
func (d *jsonDoc) insert(obj *jsonNode, key string, v any) error {
	k, _ := json.Marshal(key)
	return d.add(obj, len(obj.kids), func(prefix string, sep string) ([]byte, error) {
		b, err := d.render(v, prefix)
		return append(append(append(k, ':'), sep...), b...), err
	})
}

// appendTo adds v as the last element of the array arr.
func (d *jsonDoc) appendTo(arr *jsonNode, v any) error {
	return d.add(arr, len(arr.kids), func(prefix string, _ string) ([]byte, error) { return d.render(v, prefix) })
}

// add inserts an item (made by item, given the indentation of its lines
// and the space after a key's colon) after the last of the n items of the
// container c, laid out as its other items are: each on its own line at
// their indentation, or on the container's line after ", ".
func (d *jsonDoc) add(c *jsonNode, n int, item func(prefix, sep string) ([]byte, error)) error {
	if n == 0 {
		outer := d.lineIndent(c.start)
		b, err := item(outer+d.unit, " ")
		if err != nil {
			return err
		}
		text := d.newline + outer + d.unit + string(b) + d.newline + outer
		return d.splice(c.start+1, c.end-1, []byte(text))
	}
	first, last := c.itemStart(0), c.itemStart(n-1)
	lastEnd := c.kids[n-1].end
	sep := " "
	if c.kind == '{' {
		sep = d.colonSpace(c, n-1)
	}
	if !bytes.ContainsRune(d.src[c.start:first], '\n') {
		// On one line: separated as the other items are, ", " or ",".
		spaced := sep == " "
		if n > 1 {
			spaced = d.src[last-1] == ' ' || d.src[last-1] == '\t'
		}
		comma := ","
		if spaced {
			comma = ", "
		}
		b, err := item("", sep)
		if err != nil {
			return err
		}
		return d.splice(lastEnd, lastEnd, append([]byte(comma), compact(b, spaced)...))
	}
	indent := d.lineIndent(last)
	b, err := item(indent, sep)
	if err != nil {
		return err
	}
	return d.splice(lastEnd, lastEnd, []byte(","+d.newline+indent+string(b)))
}

// itemStart is where the i-th item of a container begins: its key, for
// an object.
func (n *jsonNode) itemStart(i int) int {
	if n.kind == '{' {
		return n.keyStarts[i]
	}
	return n.kids[i].start
}

// colonSpace is the space after the colon of the i-th member of obj, as
// the file writes it: "" or " ".
func (d *jsonDoc) colonSpace(obj *jsonNode, i int) string {
	between := d.src[obj.keyStarts[i]:obj.kids[i].start]
	if j := bytes.LastIndexByte(between, ':'); j >= 0 && j+1 < len(between) {
		return " "
	}
	return ""
}

// splice replaces src[start:end] with b and parses the text again.
func (d *jsonDoc) splice(start, end int, b []byte) error {
	src := make([]byte, 0, len(d.src)-(end-start)+len(b))
	src = append(append(append(src, d.src[:start]...), b...), d.src[end:]...)
	nd, err := parseJSONDoc(src)
	if err != nil {
		return fmt.Errorf("internal: an edit made invalid JSON: %v", err)
	}
	unit, newline := d.unit, d.newline
	*d = *nd
	d.unit, d.newline = unit, newline
	return nil
}

// render is v as JSON laid out with the file's indentation, its lines
// after the first starting with prefix; HTML characters are not escaped.
func (d *jsonDoc) render(v any, prefix string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, d.unit)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	if d.newline != "\n" {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte(d.newline))
	}
	return out, nil
}

// compact is JSON on one line, with a space after each colon and comma
// when spaced.
func compact(b []byte, spaced bool) []byte {
	var out bytes.Buffer
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			out.WriteByte(c)
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			out.WriteByte(c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == ',' || c == ':':
			out.WriteByte(c)
			if spaced {
				out.WriteByte(' ')
			}
		default:
			out.WriteByte(c)
		}
	}
	return out.Bytes()
}

// lineIndent is the white space that begins the line holding pos.
func (d *jsonDoc) lineIndent(pos int) string {
	start := bytes.LastIndexByte(d.src[:pos], '\n') + 1
	end := start
	for end < len(d.src) && (d.src[end] == ' ' || d.src[end] == '\t') {
		end++
	}
	return string(d.src[start:end])
}

// indentUnit is one level of the file's indentation: the indentation of
// the first item of the first container laid out on lines, beyond its
// container's; two spaces when nothing says.
func (d *jsonDoc) indentUnit() string {
	var find func(n *jsonNode) string
	find = func(n *jsonNode) string {
		if (n.kind == '{' || n.kind == '[') && len(n.kids) > 0 {
			first := n.itemStart(0)
			if bytes.ContainsRune(d.src[n.start:first], '\n') {
				outer, inner := d.lineIndent(n.start), d.lineIndent(first)
				if u, ok := strings.CutPrefix(inner, outer); ok && u != "" {
					return u
				}
			}
			for _, k := range n.kids {
				if u := find(k); u != "" {
					return u
				}
			}
		}
		return ""
	}
	if u := find(d.root); u != "" {
		return u
	}
	return "  "
}

// jsonParser reads a text json.Valid accepted, recording where each
// value is.
type jsonParser struct {
	src   []byte
	pos   int
	err   error
	depth int
}

func (p *jsonParser) space() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *jsonParser) value() *jsonNode {
	p.space()
	if p.err != nil || p.pos >= len(p.src) {
		p.fail()
		return &jsonNode{}
	}
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 1000 {
		p.err = errors.New("nested too deeply")
		return &jsonNode{}
	}
	n := &jsonNode{start: p.pos}
	switch c := p.src[p.pos]; c {
	case '{', '[':
		n.kind = c
		p.pos++
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		p.space()
		if p.pos < len(p.src) && p.src[p.pos] == closing {
			p.pos++
			break
		}
		for p.err == nil {
			p.space()
			if c == '{' {
				n.keyStarts = append(n.keyStarts, p.pos)
				key := p.value()
				n.keys = append(n.keys, key.str)
				p.space()
				p.pos++ // ':'
			}
			n.kids = append(n.kids, p.value())
			p.space()
			if p.pos >= len(p.src) {
				p.fail()
				break
			}
			if p.src[p.pos] == closing {
				p.pos++
				break
			}
			p.pos++ // ','
		}
	case '"':
		n.kind = '"'
		p.pos++
		for p.pos < len(p.src) && p.src[p.pos] != '"' {
			if p.src[p.pos] == '\\' {
				p.pos++
			}
			p.pos++
		}
		p.pos++
		if p.pos > len(p.src) {
			p.fail()
			break
		}
		if err := json.Unmarshal(p.src[n.start:p.pos], &n.str); err != nil {
			p.err = err
		}
	default:
		n.kind = 'v'
		for p.pos < len(p.src) && strings.IndexByte(",]} \t\r\n", p.src[p.pos]) < 0 {
			p.pos++
		}
	}
	n.end = p.pos
	return n
}

func (p *jsonParser) fail() {
	if p.err == nil {
		p.err = errors.New("unexpected end of JSON")
	}
}
