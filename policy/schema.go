package policy

import (
	"encoding/json"
	"fmt"
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
			return opa(bctx, operands, iter)
		})
	}
}

// localRefsOnly reports a $ref of schema (a JSON string or an object, as the
// built-ins take it) that is not a fragment. A schema the built-ins would
// refuse anyway (not JSON, not an object) is left to them.
func localRefsOnly(schema ast.Value) error {
	var doc any
	switch v := schema.(type) {
	case ast.String:
		// OPA checks the string with json.Valid first: the value it then
		// decodes is the one decoded here.
		d := json.NewDecoder(strings.NewReader(string(v)))
		d.UseNumber()
		if d.Decode(&doc) != nil {
			return nil
		}
	case ast.Object, *ast.Array:
		var err error
		if doc, err = ast.JSON(v); err != nil {
			return nil
		}
	default:
		return nil
	}
	return refsIn(doc)
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
