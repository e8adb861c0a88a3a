package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// A project's policy, which the agent writes, calls json.verify_schema or
// json.match_schema with a schema whose $ref names a file. OPA's schema
// loader opens file:// references whatever the capabilities say (allow_net
// bounds only the network): the policy reads files of the harness's user
// (what the file holds, whether it exists) into a reason the agent reads,
// and a reference to a FIFO or /dev/zero blocks the decision or grows the
// heap past every bound, since the read does not watch the deadline. The
// decision must not depend on the file, and must end.
func TestAttackSchemaReferenceReadsFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	secret := filepath.Join(dir, "harness.toml")
	creds := filepath.Join(dir, "credentials.json")
	for _, tt := range []struct {
		name, file, content, rule string
	}{
		// The reason quotes the file's first byte, and says whether it exists.
		{"verify_schema of a file", secret, "SECRET_TOKEN = \"t0ps3cret\"\n",
			`deny contains m if { [ok, m] := json.verify_schema({"$ref": "file://` + secret + `"}); not ok }`},
		// Through a JSON pointer: whether a key is there, what a value's type is.
		{"match_schema of a key", creds, `{"oauth": {"accessToken": "sk-ant-0123"}}`,
			`deny contains sprintf("%v", [r]) if { r := json.match_schema({}, {"$ref": "file://` + creds + `#/oauth/accessToken"}) }`},
		// A reference nested in a definition: whether the file is there.
		{"a nested reference", secret, "{\"type\": \"string\"}",
			`deny contains "the file is there" if { [ok, _] := json.verify_schema({"$ref": "#/definitions/x", "definitions": {"x": {"$ref": "file://` + secret + `"}}}); ok }`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := "package harness.custom.peek\n\n" + tt.rule + "\n"
			e, err := customEngine(t, compiler.Module{Name: "policies/project/peek.rego", Source: []byte(src)})
			if err != nil {
				t.Fatal(err)
			}
			e.SetCaching(false)
			in := contract.Input{Role: "coder", Tool: "ctx_read", Arguments: map[string]any{"path": "README.md"}}
			decide := func() contract.Decision {
				d, err := e.Decide(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			if err := os.WriteFile(tt.file, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			with := decide()
			if err := os.Remove(tt.file); err != nil {
				t.Fatal(err)
			}
			without := decide()
			if with.Decision != without.Decision || !reflect.DeepEqual(with.Reasons, without.Reasons) {
				t.Errorf("the project's policy read %s: with it %s %+v, without it %s %+v", filepath.Base(tt.file), with.Decision, with.Reasons, without.Decision, without.Reasons)
			}
		})
	}

	// A FIFO nobody writes: the read blocks, and with it the decision.
	t.Run("a FIFO blocks the decision", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip("no FIFO here:", err)
		}
		src := "package harness.custom.stall\n\ndeny contains \"x\" if { [ok, _] := json.verify_schema({\"$ref\": \"file://" + fifo + "\"}); not ok }\n"
		e, err := customEngine(t, compiler.Module{Name: "policies/project/stall.rego", Source: []byte(src)})
		if err != nil {
			t.Fatal(err)
		}
		e.SetBounds(Bounds{Timeout: 200 * time.Millisecond})
		done := make(chan contract.Decision, 1)
		go func() {
			d, _ := e.Decide(ctx, contract.Input{Role: "coder", Tool: "ctx_read"})
			done <- d
		}()
		select {
		case d := <-done:
			if d.Decision != contract.Deny {
				t.Errorf("decision %s, want deny", d.Decision)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("the decision did not end in 5 s, with a deadline of 200 ms: the policy reads a FIFO")
			// Let the read end: a writer that closes at once.
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			<-done
		}
	})
}

// A schema that refers only within itself works as in OPA, whatever its
// $id; one that refers out is invalid, in both of the built-ins' forms.
func TestSchemaReferences(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		schema string
		ok     bool
	}{
		{`{"type": "object"}`, true},
		{`{"$ref": "#/definitions/x", "definitions": {"x": {"type": "object"}}}`, true},
		{`{"$id": "https://example.com/s.json", "properties": {"a": {"$ref": "#"}}}`, true},
		{`{"properties": {"$ref": {"type": "string"}}}`, true},
		{`{"$ref": "file:///etc/passwd"}`, false},
		{`{"$ref": "s.json#/x"}`, false},
		{`{"allOf": [{"$ref": "https://example.com/s.json"}]}`, false},
		// A schema that refers to itself further into the document (a
		// tree), or to one definition twice, is fine; one whose references
		// come back to the same value, or fan out past the bound, is not.
		{`{"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}`, true},
		{`{"allOf": [{"$ref": "#/definitions/a"}, {"$ref": "#/definitions/a"}], "definitions": {"a": {"type": "object"}}}`, true},
		{`{"$id": "https://example.com/s.json", "$ref": "#/definitions/a", "definitions": {"a": {"properties": {"id": {"type": "string"}}}}}`, true},
		{`{"$ref": "#"}`, false},
		{`{"oneOf": [{"$ref": "#/definitions/a"}], "definitions": {"a": {"$ref": "#"}}}`, false},
		{`{"$ref": "#foo"}`, false},
		{`{"$ref": "#/definitions/missing"}`, false},
		{`{"$ref": "#/definitions/a", "definitions": {"a": {"$id": "https://example.com/a.json"}}}`, false},
	} {
		var obj any
		if err := json.Unmarshal([]byte(tt.schema), &obj); err != nil {
			t.Fatal(err)
		}
		for _, v := range []ast.Value{ast.String(tt.schema), ast.MustInterfaceToValue(obj)} {
			if err := localRefsOnly(v); (err == nil) != tt.ok {
				t.Errorf("%s (%T): %v, want ok %v", tt.schema, v, err, tt.ok)
			}
		}
	}
}

// A schema of a tree ("items": {"$ref": "#"}) matches documents of
// reasonable size, deep or wide: the bound of the whole check's work is
// far past them.
func TestSchemaTreeOfReasonableSize(t *testing.T) {
	t.Parallel()
	schema := ast.MustParseTerm(`{"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}, "children": {"type": "array", "items": {"$ref": "#"}}}}`)
	wide := make([]any, 10000)
	for i := range wide {
		wide[i] = map[string]any{"name": "leaf", "children": []any{}}
	}
	deep := map[string]any{"name": "leaf"}
	for range 500 {
		deep = map[string]any{"name": "node", "children": []any{deep, map[string]any{"name": "leaf"}}}
	}
	match := topdown.GetBuiltin(ast.JSONMatchSchema.Name)
	for name, doc := range map[string]any{"wide": map[string]any{"name": "root", "children": wide}, "deep": deep} {
		var out *ast.Term
		err := match(topdown.BuiltinContext{}, []*ast.Term{ast.NewTerm(ast.MustInterfaceToValue(doc)), schema}, func(t *ast.Term) error { out = t; return nil })
		if err != nil || out == nil || !out.Value.(*ast.Array).Elem(0).Equal(ast.BooleanTerm(true)) {
			t.Errorf("%s: %v, %v; want a match", name, err, out)
		}
	}
}
