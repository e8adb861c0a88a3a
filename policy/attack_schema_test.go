package policy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// cycleChild names the schema a child process of TestAttackSchemaCycle
// evaluates.
const cycleChild = "HARNESS_TEST_SCHEMA_CYCLE"

// A project's policy, which the agent writes, calls json.match_schema with
// a schema whose references come back to where they started without
// looking further into the document ({"$ref": "#"}, two definitions that
// refer to each other, a schema that refers to itself in an allOf, a not,
// an if or a dependency). OPA's validator follows them without end: the
// stack grows to Go's limit (a gigabyte, past the heap's bound, which does
// not count it) and the process dies of a stack overflow, which nothing
// recovers. The gateway then stops governing every session, the hook
// daemon every project's calls in flight, and a hook answering in its own
// process exits as the runtime chooses rather than as the hook protocol
// wants. Each must be a deny, in a process that lives on.
func TestAttackSchemaCycle(t *testing.T) {
	cases := map[string]string{
		"itself":              `{"$ref": "#"}`,
		"two definitions":     `{"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}}`,
		"itself in an allOf":  `{"allOf": [{"type": "object"}, {"$ref": "#"}]}`,
		"itself in a not":     `{"definitions": {"a": {"not": {"$ref": "#/definitions/a"}}}, "$ref": "#/definitions/a"}`,
		"itself in an if":     `{"if": {"$ref": "#"}}`,
		"itself in anyOf":     `{"anyOf": [{"$ref": "#/anyOf/1"}, {"$ref": "#/anyOf/0"}]}`,
		"a dependency":        `{"dependencies": {"path": {"$ref": "#"}}}`,
		"through an escaped":  `{"definitions": {"a/b": {"allOf": [{"$ref": "#/definitions/a~1b"}]}}, "$ref": "#/definitions/a~1b"}`,
		"through an encoded":  `{"definitions": {"a b": {"allOf": [{"$ref": "#/definitions/a%20b"}]}}, "$ref": "#/definitions/a%20b"}`,
		"a subschema's own #": `{"definitions": {"a": {"$id": "https://example.com/a.json", "oneOf": [{"$ref": "#"}]}}, "$ref": "#/definitions/a"}`,
	}
	if name := os.Getenv(cycleChild); name != "" {
		// The child: a small stack, so that the overflow, if it comes,
		// costs little.
		debug.SetMaxStack(64 << 20)
		d := decideSchema(t, cases[name], time.Minute)
		fmt.Printf("decision=%s\n", d.Decision)
		return
	}
	t.Parallel()
	for name := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestAttackSchemaCycle$", "-test.count=1")
			cmd.Env = append(os.Environ(), cycleChild+"="+name)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "decision=deny") {
				first, _, _ := strings.Cut(string(out), "\n\n")
				t.Errorf("the process evaluating the schema: %v, %q", err, first)
			}
		})
	}
}

// A schema whose references fan out without a cycle ({"allOf": [{"$ref":
// x}, {"$ref": x}]} nested forty deep) makes the validator check one
// value 2^40 times, inside one call of the built-in, where the deadline is
// not looked at: the decision does not end, and the process spins.
func TestAttackSchemaFanOut(t *testing.T) {
	t.Parallel()
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"d%d": {"allOf": [{"$ref": "#/definitions/d%d"}, {"$ref": "#/definitions/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d40": {"type": "object"}`)
	schema := `{"$ref": "#/definitions/d0", "definitions": {` + strings.Join(defs, ", ") + `}}`
	denyWithin(t, 5*time.Second, func() contract.Decision { return decideSchema(t, schema, 200*time.Millisecond) })
}

// denyWithin fails t unless decide, run on a goroutine of its own, ends
// within limit (a deadline of 200 ms, where a call past it spins on) with
// a deny.
func denyWithin(t *testing.T, limit time.Duration, decide func() contract.Decision) {
	t.Helper()
	done := make(chan contract.Decision, 1)
	go func() { done <- decide() }()
	select {
	case d := <-done:
		if d.Decision != contract.Deny {
			t.Errorf("decision %s, want deny", d.Decision)
		}
	case <-time.After(limit):
		t.Errorf("the decision did not end in %v, with a deadline of 200 ms", limit)
	}
}

// decideSchema decides a call under a project's policy that matches the
// arguments against schema, by topdown and then by the plan if it can run
// the policy: a deny if both deny, else the first decision that does not.
func decideSchema(t *testing.T, schema string, timeout time.Duration) contract.Decision {
	return decideSchemaOf(t, schema, map[string]any{"path": "README.md"}, timeout)
}

// decideSchemaOf is decideSchema for a call with the arguments args.
func decideSchemaOf(t *testing.T, schema string, args map[string]any, timeout time.Duration) contract.Decision {
	src := "package harness.custom.schema\n\ndeny contains sprintf(\"%v\", [r]) if { r := json.match_schema(input.arguments, " + schema + ") }\n"
	e, err := customEngine(t, compiler.Module{Name: "policies/project/schema.rego", Source: []byte(src)})
	if err != nil {
		t.Error(err)
		return contract.Decision{}
	}
	e.SetBounds(Bounds{Timeout: timeout})
	e.SetCaching(false)
	in := contract.Input{Role: "coder", Tool: "ctx_read", Arguments: args}
	d, _ := e.Decide(context.Background(), in)
	if d.Decision != contract.Deny {
		return d
	}
	if p, err := e.cur.Load().waitPlan(Query); err != nil || p == nil {
		return d // the plan cannot run the policy: topdown decides every call
	}
	d, _ = e.Decide(context.Background(), in)
	return d
}

// The bound of 1000 schemas applies to one value, but a schema may apply
// its 1000 to a value's children, each of which applies 1000 again to its
// own: the checks multiply at each level of the document, whose depth the
// agent chooses (its tool's arguments). 499 references to a definition
// that applies the root to the property "a" pass the bound (999 schemas a
// value), and on arguments five levels deep check the innermost 499^5
// (3*10^13) times within one call of the built-in; two references a level
// through a chain of forty definitions, 2^40. A schema that compares a
// value (const, enum) marshals it each time: 999 consts on an argument of
// 4 MB marshal 4 GB. Each must be a deny within the deadline.
func TestAttackSchemaDepthFanOut(t *testing.T) {
	t.Parallel()
	chain := func(key string, depth int, leaf any) map[string]any {
		v := leaf
		for range depth {
			v = map[string]any{key: v}
		}
		return v.(map[string]any)
	}
	array := func(depth int) map[string]any {
		var v any = []any{1}
		for range depth {
			v = []any{v}
		}
		return map[string]any{"a": v}
	}
	fan := func(apply string) string {
		return `{"allOf": [` + strings.TrimSuffix(strings.Repeat(`{"$ref": "#/definitions/d"}, `, 499), ", ") + `], "definitions": {"d": ` + apply + `}}`
	}
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"d%d": {"allOf": [{"properties": {"a": {"$ref": "#/definitions/d%d"}}}, {"properties": {"a": {"$ref": "#/definitions/d%d"}}}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d40": {"type": "object"}`)
	cases := []struct {
		name   string
		schema string
		args   map[string]any
	}{
		{"properties", fan(`{"properties": {"a": {"$ref": "#"}}}`), chain("a", 6, 1)},
		{"additionalProperties", fan(`{"additionalProperties": {"$ref": "#"}}`), chain("a", 6, 1)},
		{"patternProperties", fan(`{"patternProperties": {"^a$": {"$ref": "#"}}}`), chain("a", 6, 1)},
		{"items", fan(`{"properties": {"a": {"$ref": "#/definitions/e"}}}, "e": {"allOf": [` + strings.TrimSuffix(strings.Repeat(`{"items": {"$ref": "#/definitions/e"}}, `, 499), ", ") + `]}`), array(6)},
		{"contains", fan(`{"properties": {"a": {"$ref": "#/definitions/e"}}}, "e": {"allOf": [` + strings.TrimSuffix(strings.Repeat(`{"contains": {"$ref": "#/definitions/e"}}, `, 499), ", ") + `]}`), array(6)},
		{"a chain of definitions", `{"$ref": "#/definitions/d0", "definitions": {` + strings.Join(defs, ", ") + `}}`, chain("a", 41, 1)},
		{"const on a large value", `{"allOf": [` + strings.TrimSuffix(strings.Repeat(`{"const": 0}, `, 999), ", ") + `]}`, map[string]any{"path": strings.Repeat("a", 4<<20)}},
		// A short pattern's program is long ({1000}), and the validator
		// matches it in steps of a byte and an instruction: 30,000
		// instructions on 100 KB.
		{"a pattern's program", `{"properties": {"path": {"pattern": "` + longProgram + `"}}}`, map[string]any{"path": strings.Repeat("é", 50000)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			denyWithin(t, 10*time.Second, func() contract.Decision { return decideSchemaOf(t, c.schema, c.args, 200*time.Millisecond) })
		})
	}
}

// longProgram is a pattern of 100 bytes whose program has 30,000
// instructions.
var longProgram = `(?:` + strings.Repeat(`\\pL`, 30) + `){1000}`

// The validator compiles a pattern of patternProperties again for each
// key of each object it applies to: a pattern of 44 bytes whose program
// takes 0.6 ms to compile, on arguments of 4,000 keys, is 2.5 s of
// compiling within one call of the built-in, where the work was counted
// as 180,000 units of 200,000 (the pattern's bytes a key).
func TestAttackSchemaPatternCompiledPerKey(t *testing.T) {
	t.Parallel()
	schema := `{"patternProperties": {"(?:[\\pL\\pN\\pM\\pS\\pP][\\pL\\pN\\pM\\pS\\pP]){1000}": {}}}`
	args := map[string]any{}
	for i := range 4000 {
		args[fmt.Sprint("k", i)] = i
	}
	if err := boundedWork(ast.MustParseTerm(schema).Value, ast.MustInterfaceToValue(args)); err == nil {
		t.Errorf("a pattern compiled for each of 4,000 keys is within the bound")
	}
}

// OPA's loader compiles every pattern of a schema when it compiles the
// schema (json.verify_schema, json.match_schema), whether or not a value
// is ever matched against it: 100 patterns of 1.2 KB, each a program of
// 300,000 instructions, are 5 s of compiling inside one call of the
// built-in. Such a schema must be invalid.
func TestAttackSchemaPatternsCompiled(t *testing.T) {
	t.Parallel()
	long := `(?:` + strings.Repeat(`[^a]`, 300) + `){1000}`
	var props []string
	for i := range 100 {
		props = append(props, fmt.Sprintf(`"p%d": {"type": "string", "pattern": %q}`, i, long))
	}
	schema := `{"properties": {` + strings.Join(props, ", ") + `}}`
	if err := localRefsOnly(ast.String(schema)); err == nil {
		t.Errorf("a schema of 100 patterns of 300,000 instructions each is valid")
	}
}
