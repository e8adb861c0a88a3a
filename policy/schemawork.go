package policy

import (
	"fmt"
	"reflect"
	"regexp/syntax"

	"github.com/open-policy-agent/opa/v1/ast"
)

// maxSchemaWork bounds the work of one json.match_schema: a unit is a
// schema applied to a value, or a byte of a value the validator marshals
// (const, enum, uniqueItems) or reads (pattern, format), or a key of an
// object matched against a property or a pattern (compiled again for
// each key). Two hundred thousand take the validator about 0.2 s (a tree of 40,000
// objects, each checked against the schema of a tree).
const maxSchemaWork = 200_000

// A unit of work is about a microsecond of the validator's: a regular
// expression's instruction takes a fifth of that to compile, and a step of
// its match (an instruction on a byte) a two-hundredth. Counted as an
// instruction compiled a unit, and stepsPerUnit steps a unit, a pattern is
// never counted at less than it costs.
const stepsPerUnit = 64

// maxSchemaDepth bounds how deeply the validator's applications nest (a
// schema within a schema, a value within a value), each a frame of its
// stack.
const maxSchemaDepth = 10_000

// boundedWork refuses to match document against schema when the
// validator would do more than maxSchemaWork units of work. The bound of
// maxSchemaExpansions is one value's share: a schema may apply its
// thousand again to each child of the value (properties, items,
// additionalProperties, patternProperties, contains, propertyNames), and
// the document's depth, which the agent may choose, multiplies them. The
// work is counted as the validator does it (a schema with a $ref is
// counted with its other keywords too, a pattern as if it matched every
// key: never less), memoised by (schema, value), so that the count itself
// is bounded by the pairs it finds, each at least a unit.
func boundedWork(schemaOp, docOp ast.Value) error {
	schema, ok := decodeOperand(schemaOp)
	if !ok {
		return nil
	}
	doc, ok := decodeOperand(docOp)
	if !ok {
		return nil
	}
	root, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	w := &schemaWork{root: root, memo: map[workKey]int{}, programs: map[string]int{}}
	_, err := w.apply(root, w.node(doc), 0)
	return err
}

// vnode is a value of the document, with what the count needs of it,
// made as the count first reaches it.
type vnode struct {
	v     any
	size  int // -1 until measured
	kids  map[string]*vnode
	names map[string]*vnode // the keys, as values (propertyNames)
	elems []*vnode
}

type workKey struct {
	schema uintptr // the schema's map
	value  *vnode
}

type schemaWork struct {
	root  map[string]any
	memo  map[workKey]int // a pair's work; -1 while it is being counted
	total int             // the units of the pairs counted so far
	// programs are the sizes of the patterns met (see program).
	programs map[string]int
}

// program is about how many instructions the program of the pattern p
// has, as Go's regexp compiles it (a repetition {n} repeats what it
// repeats n times): a short pattern may have a long program. A pattern
// that does not parse costs its parsing.
func (w *schemaWork) program(p string) int {
	if n, ok := w.programs[p]; ok {
		return n
	}
	n := len(p) + 1
	if re, err := syntax.Parse(p, syntax.Perl); err == nil {
		n = max(n, programSize(re))
	}
	w.programs[p] = n
	return n
}

// programSize counts the instructions of re's program, saturating past
// the bound of a match's work.
func programSize(re *syntax.Regexp) int { return programSizeOf(re, maxSchemaWork+1) }

// programSizeOf counts the instructions of re's program, saturating at
// most.
func programSizeOf(re *syntax.Regexp, most int) int {
	n := 1
	for _, s := range re.Sub {
		n += programSizeOf(s, most)
	}
	switch re.Op {
	case syntax.OpLiteral:
		n += len(re.Rune)
	case syntax.OpRepeat:
		times := max(re.Min, re.Max)
		if re.Max < 0 {
			times = re.Min + 1
		}
		n *= max(times, 1)
	}
	return min(n, most)
}

// matching is the work of matching (and, once, compiling) the pattern p
// against a text of n bytes.
func (w *schemaWork) matching(p string, n int) (int, error) {
	_, seen := w.programs[p]
	size := w.program(p)
	units := 1 + (n+1)*size/stepsPerUnit
	if !seen {
		units += size
	}
	return w.add(units)
}

func (w *schemaWork) node(v any) *vnode { return &vnode{v: v, size: -1} }

func (n *vnode) child(k string) *vnode {
	if n.kids == nil {
		n.kids = map[string]*vnode{}
	}
	c, ok := n.kids[k]
	if !ok {
		c = &vnode{v: n.v.(map[string]any)[k], size: -1}
		n.kids[k] = c
	}
	return c
}

func (n *vnode) name(k string) *vnode {
	if n.names == nil {
		n.names = map[string]*vnode{}
	}
	c, ok := n.names[k]
	if !ok {
		c = &vnode{v: k, size: -1}
		n.names[k] = c
	}
	return c
}

func (n *vnode) elem(i int) *vnode {
	a := n.v.([]any)
	if n.elems == nil {
		n.elems = make([]*vnode, len(a))
	}
	if n.elems[i] == nil {
		n.elems[i] = &vnode{v: a[i], size: -1}
	}
	return n.elems[i]
}

// sizeOf is about the length of v's JSON, without marshalling it.
func sizeOf(v any) int {
	switch v := v.(type) {
	case map[string]any:
		s := 2
		for k, e := range v {
			s += len(k) + 4 + sizeOf(e)
		}
		return s
	case []any:
		s := 2
		for _, e := range v {
			s += 1 + sizeOf(e)
		}
		return s
	case string:
		return len(v) + 2
	case fmt.Stringer: // json.Number
		return len(v.String())
	default:
		return 5
	}
}

func (n *vnode) sizeOf() int {
	if n.size < 0 {
		n.size = sizeOf(n.v)
	}
	return n.size
}

// apply counts the work of applying the schema s to the value n, past
// what is counted already.
func (w *schemaWork) apply(s any, n *vnode, depth int) (int, error) {
	obj, ok := s.(map[string]any)
	if !ok || len(obj) == 0 {
		return w.add(1)
	}
	if depth > maxSchemaDepth {
		return 0, fmt.Errorf("schema applications nest more than %d deep", maxSchemaDepth)
	}
	key := workKey{reflect.ValueOf(obj).Pointer(), n}
	switch c, seen := w.memo[key]; {
	case seen && c < 0:
		return 0, fmt.Errorf("the schema applies itself to the same value without end")
	case seen:
		// The validator does the work again: counted again, not walked.
		return w.add(c)
	}
	w.memo[key] = -1
	before := w.total
	if _, err := w.add(1); err != nil {
		return 0, err
	}
	sub := func(s any, n *vnode) error {
		_, err := w.apply(s, n, depth+1)
		return err
	}
	if ref, ok := obj["$ref"].(string); ok {
		target, _, ok := resolvePointer(w.root, ref)
		if !ok {
			return 0, fmt.Errorf("reference %q: not a JSON pointer into the schema", ref)
		}
		if err := sub(target, n); err != nil {
			return 0, err
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := obj[k].([]any)
		for _, e := range list {
			if err := sub(e, n); err != nil {
				return 0, err
			}
		}
	}
	for _, k := range []string{"not", "if", "then", "else"} {
		if e, ok := obj[k]; ok {
			if err := sub(e, n); err != nil {
				return 0, err
			}
		}
	}
	for _, k := range []string{"const", "enum", "uniqueItems", "pattern", "format"} {
		if _, ok := obj[k]; ok {
			if _, err := w.add(n.sizeOf()); err != nil {
				return 0, err
			}
		}
	}
	if text, ok := n.v.(string); ok {
		if p, ok := obj["pattern"].(string); ok {
			if _, err := w.matching(p, len(text)); err != nil {
				return 0, err
			}
		}
		if f, _ := obj["format"].(string); f == "regex" {
			// The text is compiled as a pattern.
			if _, err := w.add(w.program(text)); err != nil {
				return 0, err
			}
		}
	}
	switch v := n.v.(type) {
	case map[string]any:
		deps, _ := obj["dependencies"].(map[string]any)
		props, _ := obj["properties"].(map[string]any)
		pats, _ := obj["patternProperties"].(map[string]any)
		if _, err := w.add(len(v) * len(props)); err != nil {
			return 0, err
		}
		// Each pattern is compiled again for each key it is matched
		// against.
		for p := range pats {
			size := w.program(p)
			for k := range v {
				if _, err := w.add(1 + size + (len(k)+1)*size/stepsPerUnit); err != nil {
					return 0, err
				}
			}
		}
		additional := obj["additionalProperties"]
		names := obj["propertyNames"]
		for k := range v {
			if d, ok := deps[k]; ok {
				if err := sub(d, n); err != nil {
					return 0, err
				}
			}
			p, named := props[k]
			if named {
				if err := sub(p, n.child(k)); err != nil {
					return 0, err
				}
			}
			for _, p := range pats {
				if err := sub(p, n.child(k)); err != nil {
					return 0, err
				}
			}
			if additional != nil && !named {
				if err := sub(additional, n.child(k)); err != nil {
					return 0, err
				}
			}
			if names != nil {
				if err := sub(names, n.name(k)); err != nil {
					return 0, err
				}
			}
		}
	case []any:
		items := obj["items"]
		tuple, isTuple := items.([]any)
		for i := range v {
			var err error
			switch {
			case isTuple && i < len(tuple):
				err = sub(tuple[i], n.elem(i))
			case isTuple:
				if a, ok := obj["additionalItems"]; ok {
					err = sub(a, n.elem(i))
				}
			case items != nil:
				err = sub(items, n.elem(i))
			}
			if err != nil {
				return 0, err
			}
			if c, ok := obj["contains"]; ok {
				if err := sub(c, n.elem(i)); err != nil {
					return 0, err
				}
			}
		}
	}
	w.memo[key] = w.total - before
	return 0, nil
}

// add counts c units, refusing the schema past maxSchemaWork.
func (w *schemaWork) add(c int) (int, error) {
	if w.total += c; w.total > maxSchemaWork || w.total < 0 {
		return 0, fmt.Errorf("matching the document against the schema would take more than %d units of work (schemas applied to values, bytes compared)", maxSchemaWork)
	}
	return c, nil
}

// boundedPatterns refuses a schema whose patterns (pattern, the keys of
// patternProperties) have programs of more than maxSchemaWork
// instructions in all: OPA's loader compiles each when it compiles the
// schema, matched or not, inside one call of the built-in.
func boundedPatterns(schema any) error {
	w := &schemaWork{programs: map[string]int{}}
	total := 0
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if p, ok := e.(string); ok && k == "pattern" {
					total += w.program(p)
				}
				if pats, ok := e.(map[string]any); ok && k == "patternProperties" {
					for p := range pats {
						total += w.program(p)
					}
				}
				if total > maxSchemaWork {
					return fmt.Errorf("the schema's patterns have programs of more than %d instructions in all", maxSchemaWork)
				}
				if err := walk(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range v {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(schema)
}
