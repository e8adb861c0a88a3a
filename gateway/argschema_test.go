package gateway

import (
	"encoding/json"
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
	if depth > maxSchemaDepth+1 {
		t.Errorf("followed %d levels, past %d", depth, maxSchemaDepth)
	}
}
