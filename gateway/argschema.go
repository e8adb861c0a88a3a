package gateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentharness/harness/internal/ijson"
)

// argNames are the names a tool's inputSchema gives the keys of its
// arguments (its properties, and theirs within, through objects and
// arrays' items), by their folded case (see ijson.FoldCase). An upstream that
// reads its arguments into a struct by encoding/json takes a key in any
// case for a property: "Path" for "path". The policy sees "Path", which a
// rule on input.arguments.path never looks at, so a key that is not one
// of the schema's, but is one of them in another case, is refused (see
// check). nil: the schema names none.
type argNames struct {
	props map[string]*argNames // by the name as the schema writes it
	fold  map[string]string    // a folded name to the name as the schema writes it
	items *argNames            // the names within an array's items
}

// maxSchemaDepth bounds how deep argNames follows a schema: an upstream
// writes its schemas, but nothing of the gateway's should grow without
// bound on what it is sent.
const maxSchemaDepth = 32

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
		return namesOf(schema, 0)
	}
	if len(it.Arguments) == 0 {
		return nil
	}
	n := &argNames{props: map[string]*argNames{}, fold: map[string]string{}}
	for _, a := range it.Arguments {
		n.props[a.Name] = nil
		n.fold[ijson.FoldCase([]byte(a.Name))] = a.Name
	}
	return n
}

// namesOf is the names of a JSON schema, decoded.
func namesOf(schema any, depth int) *argNames {
	s, ok := schema.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return nil
	}
	n := &argNames{}
	if props, ok := s["properties"].(map[string]any); ok && len(props) > 0 {
		n.props = make(map[string]*argNames, len(props))
		n.fold = make(map[string]string, len(props))
		for name, sub := range props {
			n.props[name] = namesOf(sub, depth+1)
			n.fold[ijson.FoldCase([]byte(name))] = name
		}
	}
	n.items = namesOf(s["items"], depth+1)
	if n.props == nil && n.items == nil {
		return nil
	}
	return n
}

// named returns the schema's name that k is in another case, if any: the
// names compared one by one while they are few, else k folded and looked
// up.
func (n *argNames) named(k string) (string, bool) {
	if len(n.props) <= 16 {
		for name := range n.props {
			if strings.EqualFold(name, k) {
				return name, true
			}
		}
		return "", false
	}
	name, ok := n.fold[ijson.FoldCase([]byte(k))]
	return name, ok
}

// check refuses a key of v (a call's arguments, decoded) that is not one
// of the names the schema gives at its place but is one of them in
// another case.
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
				return fmt.Errorf("the key %q is not the tool's %q, which it is in another case: a tool that reads keys without regard to case (encoding/json's struct fields) would take it for %q, which the policy did not see", clip(k, 64), clip(name, 64), clip(name, 64))
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
