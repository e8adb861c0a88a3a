package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestArgNames(t *testing.T) {
	const nested = `{"name":"t","inputSchema":{"type":"object","properties":{"path":{"type":"string"},
		"opts":{"type":"object","properties":{"force":{"type":"boolean"}}},
		"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{},"newText":{}}}}}}}`
	for _, tt := range []struct {
		name, listed, args string
		want               string // in the error; "" for none
	}{
		{"the tool's keys", nested, `{"path":"a","opts":{"force":true},"edits":[{"oldText":"x","newText":"y"}]}`, ""},
		{"keys the schema does not name", nested, `{"path":"a","extra":1,"opts":{"other":2},"edits":[{"x":1}]}`, ""},
		{"a key in another case", nested, `{"Path":"a"}`, `the key "Path" is not the tool's "path"`},
		{"a key in capitals", nested, `{"PATH":"a"}`, `the key "PATH" is not the tool's "path"`},
		{"a key under the Kelvin sign's folding", `{"name":"t","inputSchema":{"properties":{"kind":{}}}}`, "{\"\u212aind\":1}", `is not the tool's "kind"`},
		{"a nested key in another case", nested, `{"opts":{"Force":true}}`, `the key "Force" is not the tool's "force"`},
		{"a key of an array's item in another case", nested, `{"edits":[{"oldText":"x"},{"newtext":"y"}]}`, `the key "newtext" is not the tool's "newText"`},
		{"a value in another case", nested, `{"path":"PATH"}`, ""},
		{"a schema without properties", `{"name":"t","inputSchema":{"type":"object"}}`, `{"Path":1}`, ""},
		{"no schema", `{"name":"t"}`, `{"Path":1}`, ""},
		{"a schema that is not an object", `{"name":"t","inputSchema":true}`, `{"Path":1}`, ""},
		{"a property by $ref", `{"name":"t","inputSchema":{"properties":{"size":{"$ref":"#/$defs/s"}}}}`, `{"Size":1}`, `the key "Size" is not the tool's "size"`},
		{"a prompt's arguments", `{"name":"p","arguments":[{"name":"language","required":true}]}`, `{"Language":"go"}`, `the key "Language" is not the tool's "language"`},
		{"a prompt's own arguments", `{"name":"p","arguments":[{"name":"language"}]}`, `{"language":"go"}`, ""},
		{"arguments that are not an object", nested, `["Path"]`, ""},
		{"a key spelt with '_' or '-' otherwise", `{"name":"t","inputSchema":{"properties":{"file_path":{}}}}`, `{"filePath":"x"}`, `the key "filePath" is not the tool's "file_path"`},
		{"a key under full case mapping", `{"name":"t","inputSchema":{"properties":{"file_path":{}}}}`, "{\"\ufb01le_path\":\"x\"}", `is not the tool's "file_path"`},
		{"a dotless i", `{"name":"t","inputSchema":{"properties":{"file":{}}}}`, "{\"f\u0131le\":\"x\"}", `is not the tool's "file"`},
		{"a key spelt with '-'", `{"name":"t","inputSchema":{"properties":{"file_path":{}}}}`, `{"FILE-PATH":"x"}`, `is not the tool's "file_path"`},
		{"both spellings named", `{"name":"t","inputSchema":{"properties":{"file_path":{},"filePath":{}}}}`, `{"filePath":"x","file_path":"y"}`, ""},
		{"a top-level $ref", `{"name":"t","inputSchema":{"$ref":"#/$defs/A","$defs":{"A":{"type":"object","properties":{"path":{}}}}}}`, `{"Path":1}`, `is not the tool's "path"`},
		{"a nested $ref into definitions", `{"name":"t","inputSchema":{"properties":{"o":{"$ref":"#/definitions/O"}},"definitions":{"O":{"properties":{"path":{}}}}}}`, `{"o":{"PATH":1}}`, `is not the tool's "path"`},
		{"a $ref to another property's items", `{"name":"t","inputSchema":{"properties":{"a":{"type":"array","items":{"properties":{"path":{}}}},"b":{"$ref":"#/properties/a/items"}}}}`, `{"b":{"Path":1}}`, `is not the tool's "path"`},
		{"anyOf, as an optional model", `{"name":"t","inputSchema":{"properties":{"o":{"anyOf":[{"type":"null"},{"properties":{"path":{}}}]}}}}`, `{"o":{"Path":1}}`, `is not the tool's "path"`},
		{"oneOf beside properties", `{"name":"t","inputSchema":{"properties":{"a":{}},"oneOf":[{"properties":{"path":{}}},{"properties":{"url":{}}}]}}`, `{"a":1,"URL":"x"}`, `is not the tool's "url"`},
		{"allOf", `{"name":"t","inputSchema":{"allOf":[{"properties":{"path":{}}},{"properties":{"mode":{}}}]}}`, `{"path":"x","Mode":1}`, `is not the tool's "mode"`},
		{"if and then", `{"name":"t","inputSchema":{"if":{"properties":{"kind":{}}},"then":{"properties":{"path":{}}}}}`, `{"kind":1,"pAth":2}`, `is not the tool's "path"`},
		{"additionalProperties, a map of objects", `{"name":"t","inputSchema":{"properties":{"files":{"additionalProperties":{"properties":{"path":{}}}}}}}`, `{"files":{"any name":{"Path":1}}}`, `is not the tool's "path"`},
		{"patternProperties", `{"name":"t","inputSchema":{"patternProperties":{"^x":{"properties":{"path":{}}}}}}`, `{"x1":{"Path":1}}`, `is not the tool's "path"`},
		{"tuple items", `{"name":"t","inputSchema":{"properties":{"pair":{"items":[{"properties":{"path":{}}},{}]}}}}`, `{"pair":[{"Path":1},{}]}`, `is not the tool's "path"`},
		{"prefixItems", `{"name":"t","inputSchema":{"properties":{"pair":{"prefixItems":[{},{"properties":{"path":{}}}]}}}}`, `{"pair":[{},{"Path":1}]}`, `is not the tool's "path"`},
		{"a $ref to an anchor", `{"name":"t","inputSchema":{"properties":{"o":{"$ref":"#item"}},"$defs":{"x":{"$anchor":"item","properties":{"path":{}}}}}}`, `{"o":{"Path":1}}`, `is not the tool's "path"`},
		{"a $ref to an old-style $id", `{"name":"t","inputSchema":{"properties":{"o":{"$ref":"#item"}},"definitions":{"x":{"$id":"#item","properties":{"path":{}}}}}}`, `{"o":{"Path":1}}`, `is not the tool's "path"`},
		{"a $ref to an anchor no schema has", `{"name":"t","inputSchema":{"properties":{"o":{"$ref":"#none"}}}}`, `{"o":{"Path":1}}`, ""},
		{"a $ref that points nowhere", `{"name":"t","inputSchema":{"properties":{"a":{"$ref":"#/nowhere/x"},"b":{"$ref":"https://example.com/s.json"}}}}`, `{"a":{"Path":1},"b":2}`, ""},
		{"a $ref to itself", `{"name":"t","inputSchema":{"$ref":"#","properties":{"path":{},"child":{"$ref":"#"}}}}`, `{"child":{"child":{"Path":1}}}`, `is not the tool's "path"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args, err := arguments(json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			err = schemaNames(json.RawMessage(tt.listed)).check(args)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// A schema nested past maxSchemaDepth is read to that depth: what an
// upstream lists cannot make the gateway follow it without end.
func TestArgNamesAreBounded(t *testing.T) {
	schema := `{}`
	for range 10 * maxSchemaDepth {
		schema = `{"properties":{"a":` + schema + `}}`
	}
	n := schemaNames(json.RawMessage(`{"name":"t","inputSchema":` + schema + `}`))
	depth := 0
	for ; n != nil; n = n.props["a"] {
		depth++
	}
	if depth > maxSchemaDepth+2 {
		t.Errorf("followed %d levels, past %d", depth, maxSchemaDepth)
	}
}

// A schema whose alternatives point, level after level, twice to the
// next (2^40 paths) is read within maxSchemaNodes, at once.
func TestArgNamesOfAFanOut(t *testing.T) {
	defs := map[string]any{}
	for i := range 40 {
		next := map[string]any{"$ref": "#/$defs/d" + strconv.Itoa(i+1)}
		defs["d"+strconv.Itoa(i)] = map[string]any{"properties": map[string]any{"p" + strconv.Itoa(i): map[string]any{}}, "anyOf": []any{next, next}}
	}
	schema, _ := json.Marshal(map[string]any{"name": "t", "inputSchema": map[string]any{"$ref": "#/$defs/d0", "$defs": defs}})
	n := schemaNames(schema)
	if name, ok := n.named("P0"); !ok || name != "p0" {
		t.Fatalf("the first level's names were not read: %+v", n)
	}
	var count func(*argNames) int
	count = func(n *argNames) int {
		if n == nil {
			return 0
		}
		c := 1 + count(n.items) + count(n.other)
		for _, in := range n.props {
			c += count(in)
		}
		return c
	}
	if c := count(n); c > maxSchemaNodes+1 {
		t.Errorf("%d names kept, past %d", c, maxSchemaNodes)
	}
}

// Past maxSchemaNodes, the names read are the same on every reading (the
// properties taken in order), not whichever a map's order gave.
func TestArgNamesPastTheBoundAreTheSame(t *testing.T) {
	props := map[string]any{}
	for i := range maxSchemaNodes + 500 {
		props[fmt.Sprintf("p%05d", i)] = map[string]any{}
	}
	listed, _ := json.Marshal(map[string]any{"name": "t", "inputSchema": map[string]any{"properties": props}})
	first := slices.Sorted(maps.Keys(schemaNames(listed).props))
	for range 5 {
		if again := slices.Sorted(maps.Keys(schemaNames(listed).props)); !slices.Equal(again, first) {
			t.Fatalf("another reading read other names: %d names, %v… against %v…", len(again), again[len(again)-3:], first[len(first)-3:])
		}
	}
	if len(first) >= len(props) {
		t.Errorf("read %d names of %d, past the bound of %d schemas", len(first), len(props), maxSchemaNodes)
	}
}
