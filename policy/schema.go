package policy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/agentharness/harness/internal/strict"
)

// OPA's json.verify_schema and json.match_schema resolve a schema's $ref
// that names another document: allow_net bounds the network, but a file://
// reference is opened whatever the capabilities say. A project's policy
// would read the harness's user's files (whether one exists, its first
// byte, which keys a JSON file has) into a reason the agent reads, and a
// reference to a FIFO or /dev/zero would block the decision, or grow the
// heap, past every bound: the read does not watch the deadline. The
// harness puts its own implementations in their place (for every
// evaluation of the process: decisions, plans, `harness test`), which
// refuse a schema with a reference outside itself before OPA's loader
// sees it: a $ref must be a fragment (#, #/definitions/x), which resolves
// within the schema whatever its $id says.
func init() {
	for _, b := range []struct {
		decl   *ast.Builtin
		schema int // the schema's operand
		verify bool
	}{
		{ast.JSONSchemaVerify, 0, true},
		{ast.JSONMatchSchema, 1, false},
	} {
		opa := topdown.GetBuiltin(b.decl.Name)
		topdown.RegisterBuiltinFunc(b.decl.Name, func(bctx topdown.BuiltinContext, operands []*ast.Term, iter func(*ast.Term) error) error {
			if len(operands) > b.schema {
				if err := localRefsOnly(operands[b.schema].Value); err != nil {
					if b.verify {
						// verify_schema answers an invalid schema, as OPA's does.
						return iter(ast.ArrayTerm(ast.BooleanTerm(false), ast.StringTerm("jsonschema: "+err.Error())))
					}
					return err
				}
			}
			if !b.verify && len(operands) >= 2 {
				// match_schema has the document too: the work of the
				// whole check is bounded, not only each value's share.
				if err := boundedWork(operands[1].Value, operands[0].Value); err != nil {
					return err
				}
			}
			return opa(bctx, operands, iter)
		})
	}
}

// localRefsOnly reports a $ref of schema (a JSON string or an object, as the
// built-ins take it) that is not a fragment. A schema the built-ins would
// refuse anyway (not JSON, not an object) is left to them.
func localRefsOnly(schema ast.Value) error {
	doc, ok := decodeOperand(schema)
	if !ok {
		return nil
	}
	if err := refsIn(doc); err != nil {
		return err
	}
	if err := boundedPatterns(doc); err != nil {
		return err
	}
	return boundedRefs(doc)
}

// decodeOperand decodes a schema or a document as the built-ins take it
// (a JSON string, an object or an array); false for one they refuse.
func decodeOperand(v ast.Value) (any, bool) {
	var doc any
	switch v := v.(type) {
	case ast.String:
		// OPA checks the string with json.Valid first: the value it then
		// decodes is the one decoded here.
		d := json.NewDecoder(strings.NewReader(string(v)))
		d.UseNumber()
		if d.Decode(&doc) != nil {
			return nil, false
		}
	case ast.Object, *ast.Array:
		var err error
		if doc, err = ast.JSON(v); err != nil {
			return nil, false
		}
	default:
		return nil, false
	}
	return doc, true
}

// maxSchemaExpansions bounds how many schemas the validator may apply to
// one value of the document, following references and the keywords that
// apply a schema to the same value (allOf, anyOf, oneOf, not, if, then,
// else, dependencies): a schema past it is refused.
const maxSchemaExpansions = 1000

// sameValue are the keywords whose schemas apply to the value the schema
// applies to, rather than to a part of it: an array of schemas, or one.
var sameValue = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true}

// boundedRefs refuses a schema whose references the validator would follow
// without end, or past maxSchemaExpansions times, for one value of the
// document. OPA's validator follows a reference that comes back to where
// it started without looking further into the document ({"$ref": "#"},
// two definitions that refer to each other) until the stack overflows,
// which kills the process; and one that fans out (an allOf of two
// references to the next definition, forty deep) checks a value 2^40
// times within one call of the built-in, where no deadline is looked at.
// A reference is resolved from the schema's root, so a schema below the
// root with an $id of its own (which would make its # itself) is refused
// when the schema has references, and so is a reference that is not a
// JSON pointer into the schema.
func boundedRefs(doc any) error {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	var refs []string
	subID := false
	var walk func(v any, ptr string, top bool) error
	walk = func(v any, ptr string, top bool) error {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if _, ok := e.(string); ok {
					switch {
					case k == "$ref":
						refs = append(refs, ptr)
					case (k == "$id" || k == "id") && !top:
						subID = true
					}
				}
				if err := walk(e, ptr+"/"+escapePointer(k), false); err != nil {
					return err
				}
			}
		case []any:
			for i, e := range v {
				if err := walk(e, fmt.Sprintf("%s/%d", ptr, i), false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	walk(root, "", true)
	if len(refs) == 0 {
		return nil
	}
	if subID {
		return fmt.Errorf("a schema below the root with an $id of its own: a policy's schema with references may have an $id at its root only")
	}
	// expansions[ptr] is how many schemas apply to a value the schema at
	// ptr applies to (itself included); -1 while it is being counted.
	expansions := map[string]int{}
	var count func(ptr string, v any) (int, error)
	count = func(ptr string, v any) (int, error) {
		obj, ok := v.(map[string]any)
		if !ok {
			return 0, nil
		}
		switch n, seen := expansions[ptr]; {
		case seen && n < 0:
			return 0, fmt.Errorf("reference cycle at %q: the schema applies itself to the same value without end", strict.Clip("#"+ptr))
		case seen:
			return n, nil
		}
		expansions[ptr] = -1
		total := 1
		add := func(p string, sub any) error {
			n, err := count(p, sub)
			if err != nil {
				return err
			}
			if total += n; total > maxSchemaExpansions {
				return fmt.Errorf("references at %q apply more than %d schemas to one value", strict.Clip("#"+ptr), maxSchemaExpansions)
			}
			return nil
		}
		for k, e := range obj {
			var err error
			switch {
			case k == "$ref":
				s, _ := e.(string)
				target, p, ok := resolvePointer(root, s)
				if !ok {
					return 0, fmt.Errorf("reference %q: not a JSON pointer into the schema", strict.Clip(s))
				}
				err = add(p, target)
			case k == "dependencies":
				deps, _ := e.(map[string]any)
				for name, d := range deps {
					if err = add(ptr+"/dependencies/"+escapePointer(name), d); err != nil {
						break
					}
				}
			case sameValue[k]:
				if list, ok := e.([]any); ok {
					for i, sub := range list {
						if err = add(fmt.Sprintf("%s/%s/%d", ptr, k, i), sub); err != nil {
							break
						}
					}
				} else {
					err = add(ptr+"/"+k, e)
				}
			}
			if err != nil {
				return 0, err
			}
		}
		expansions[ptr] = total
		return total, nil
	}
	for _, r := range refs {
		v, _, _ := resolvePointer(root, "#"+r)
		if _, err := count(r, v); err != nil {
			return err
		}
	}
	return nil
}

// resolvePointer resolves a reference within the schema (#, #/a/b, with
// ~0, ~1 and percent escapes), returning the schema it names and its
// pointer written as boundedRefs writes pointers.
func resolvePointer(root map[string]any, ref string) (any, string, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, "", false
	}
	if unescaped, err := url.PathUnescape(frag); err == nil {
		frag = unescaped
	} else {
		return nil, "", false
	}
	if frag == "" {
		return root, "", true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, "", false
	}
	var v any = root
	ptr := ""
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			if v, ok = c[tok]; !ok {
				return nil, "", false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) || strconv.Itoa(i) != tok {
				return nil, "", false
			}
			v = c[i]
		default:
			return nil, "", false
		}
		ptr += "/" + escapePointer(tok)
	}
	return v, ptr, true
}

// escapePointer escapes a key as a JSON pointer's token.
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// refsIn walks a decoded schema for a "$ref" key whose value is a string
// not beginning with #. It looks at every object, not only where a keyword
// may be: a "$ref" in an example or an enum is refused too.
func refsIn(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" && !strings.HasPrefix(s, "#") {
				return fmt.Errorf("reference %q: a policy's schema may only refer within itself (#...)", strict.Clip(s))
			}
			if err := refsIn(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := refsIn(e); err != nil {
				return err
			}
		}
	}
	return nil
}
