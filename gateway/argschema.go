package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentharness/harness/internal/ijson"
)

// argNames are the names a tool's inputSchema gives the keys of its
// arguments, at each place: its properties, and theirs within, through
// objects, arrays' items, the schemas of keys it does not name
// (additionalProperties, patternProperties), the alternatives and parts
// it is made of (allOf, anyOf, oneOf, if/then/else) and the local $refs
// it points through (JSON pointers and anchors). An upstream that reads its arguments into a struct
// by encoding/json takes a key in any case for a property: "Path" for
// "path" (and encoding/json/v2, asked to ignore case, takes "file-path"
// and "filePath" for "file_path" too). The policy sees "Path", which a
// rule on input.arguments.path never looks at, so a key that is not one
// of the schema's names, but is one of them but for case, '_' and '-', is
// refused (see check). nil: the schema names none.
type argNames struct {
	props map[string]*argNames // by the name as the schema writes it
	loose map[string]string    // a name as looseName writes it, to the name
	items *argNames            // within an array's items
	other *argNames            // within the values of keys it does not name
}

// Bounds on what argNames reads of a schema: an upstream writes its
// schemas, but nothing of the gateway's should grow without bound on
// what it is sent, nor follow $refs round in a circle, nor make an
// alternative of alternatives that doubles at each level. Past either, a
// schema's names are read as far as they were.
const (
	maxSchemaDepth = 32
	maxSchemaNodes = 4096 // schemas read for one tool, $refs followed included
)

// schemaNames reads the names of a listed tool's inputSchema (or of a
// listed prompt's arguments); nil when there are none to read.
func schemaNames(listed json.RawMessage) *argNames {
	var it struct {
		InputSchema json.RawMessage `json:"inputSchema"`
		Arguments   []struct {
			Name string `json:"name"`
		} `json:"arguments"`
	}
	if json.Unmarshal(listed, &it) != nil {
		return nil
	}
	if len(it.InputSchema) > 0 {
		var schema any
		if json.Unmarshal(it.InputSchema, &schema) != nil {
			return nil
		}
		r := &schemaReader{root: schema, budget: maxSchemaNodes}
		n := &argNames{}
		r.read(n, schema, 0)
		return n.orNil()
	}
	n := &argNames{}
	for _, a := range it.Arguments {
		n.add(a.Name, nil)
	}
	return n.orNil()
}

// schemaReader reads one schema's names, within its bounds.
type schemaReader struct {
	root    any
	budget  int            // schemas still to read
	anchors map[string]any // by name, once a $ref has asked for one
}

// read adds the names of schema to n.
func (r *schemaReader) read(n *argNames, schema any, depth int) {
	s, ok := schema.(map[string]any)
	if !ok || depth > maxSchemaDepth || r.budget <= 0 {
		return
	}
	r.budget--
	if ref, ok := s["$ref"].(string); ok {
		r.read(n, r.resolve(ref), depth+1)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(props)) { // the same names on every reading, bound or not
			if r.budget <= 0 {
				break
			}
			inner := n.add(name, &argNames{})
			r.read(inner, props[name], depth+1)
		}
	}
	for _, key := range []string{"additionalProperties", "unevaluatedProperties"} {
		if sub, ok := s[key].(map[string]any); ok {
			n.other = r.into(n.other, sub, depth)
		}
	}
	if pp, ok := s["patternProperties"].(map[string]any); ok {
		for _, sub := range pp {
			n.other = r.into(n.other, sub, depth)
		}
	}
	switch items := s["items"].(type) {
	case map[string]any:
		n.items = r.into(n.items, items, depth)
	case []any: // the tuples of drafts before 2020-12
		for _, sub := range items {
			n.items = r.into(n.items, sub, depth)
		}
	}
	if prefix, ok := s["prefixItems"].([]any); ok {
		for _, sub := range prefix {
			n.items = r.into(n.items, sub, depth)
		}
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		if subs, ok := s[key].([]any); ok {
			for _, sub := range subs {
				r.read(n, sub, depth+1) // an alternative's names are the object's
			}
		}
	}
	for _, key := range []string{"if", "then", "else"} {
		r.read(n, s[key], depth+1)
	}
}

// into reads schema into n, made if nil.
func (r *schemaReader) into(n *argNames, schema any, depth int) *argNames {
	if n == nil {
		n = &argNames{}
	}
	r.read(n, schema, depth+1)
	return n
}

// resolve is the schema a local $ref ("#/$defs/x", "#/properties/a/items")
// points to, nil for any other.
func (r *schemaReader) resolve(ref string) any {
	pointer, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	if p, err := url.PathUnescape(pointer); err == nil {
		pointer = p
	}
	at := r.root
	if pointer == "" {
		return at
	}
	if !strings.HasPrefix(pointer, "/") {
		return r.anchor(pointer)
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = unescapePointer.Replace(tok)
		switch v := at.(type) {
		case map[string]any:
			at = v[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			at = v[i]
		default:
			return nil
		}
	}
	return at
}

// anchor is the schema of the root that names itself name ("$anchor",
// or an "$id" of "#name" as drafts before 2019-09 wrote it), nil if none
// does; the anchors are gathered once, from at most maxSchemaNodes of the
// root's objects and arrays.
func (r *schemaReader) anchor(name string) any {
	if r.anchors == nil {
		r.anchors = map[string]any{}
		visited := 0
		var walk func(v any)
		walk = func(v any) {
			if visited++; visited > maxSchemaNodes {
				return
			}
			switch v := v.(type) {
			case map[string]any:
				if a, ok := v["$anchor"].(string); ok {
					r.anchors[a] = v
				}
				if id, ok := v["$id"].(string); ok && strings.HasPrefix(id, "#") {
					r.anchors[id[1:]] = v
				}
				for _, k := range slices.Sorted(maps.Keys(v)) {
					walk(v[k])
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(r.root)
	}
	return r.anchors[name]
}

var unescapePointer = strings.NewReplacer("~1", "/", "~0", "~")

// add adds name and returns the names within it, inner if it had none.
func (n *argNames) add(name string, inner *argNames) *argNames {
	if n.props == nil {
		n.props, n.loose = map[string]*argNames{}, map[string]string{}
	}
	if had, ok := n.props[name]; ok && had != nil {
		return had
	}
	n.props[name] = inner
	n.loose[looseName(name)] = name
	return inner
}

// orNil is n, nil if it names nothing anywhere.
func (n *argNames) orNil() *argNames {
	if n == nil || len(n.props) == 0 && n.items.orNil() == nil && n.other.orNil() == nil {
		return nil
	}
	return n
}

// looseName is a name as the most forgiving matcher reads it: without
// '_' and '-', in the form in which names a reader that ignores case
// takes for one are equal (see ijson.KeyForm).
func looseName(s string) string { return ijson.KeyForm([]byte(unseparated.Replace(s))) }

var unseparated = strings.NewReplacer("_", "", "-", "")

// named returns the schema's name that k is but for case, '_' and '-', if
// k is not one of the names itself.
func (n *argNames) named(k string) (string, bool) {
	if _, ok := n.props[k]; ok || len(n.props) == 0 {
		return "", false
	}
	name, ok := n.loose[looseName(k)]
	return name, ok
}

// check refuses a key of v (a call's arguments, decoded) that is not one
// of the names the schema gives at its place but is one of them in
// another case (or spelling of '_' and '-').
func (n *argNames) check(v any) error {
	if n == nil {
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			if inner, ok := n.props[k]; ok {
				if err := inner.check(sub); err != nil {
					return err
				}
				continue
			}
			if name, ok := n.named(k); ok {
				return fmt.Errorf("the key %.64q is not the tool's %.64q, which it is but for case or '_' and '-': a tool that reads keys without regard to those (encoding/json's struct fields) would take it for %.64q, which the policy did not see", k, name, name)
			}
			if err := n.other.check(sub); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := n.items.check(e); err != nil {
				return err
			}
		}
	}
	return nil
}
