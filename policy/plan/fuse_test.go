package plan

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	harnessrego "github.com/agentharness/harness/rego"
)

// An object literal made at once (fuseObjects) is the object its inserts
// one by one make, and one is made at once only when that holds.
func TestObjectsMadeAtOnce(t *testing.T) {
	// Constants: -1 "a", -2 "b", -3 "x". Locals: 2 the object, 3 to 6
	// values, 7 the result's binding.
	const a, b, x = -1, -2, -3
	insert := func(key, val, obj int32) stmt { return stmt{kind: kObjectInsert, a: key, c: val, b: obj} }
	mk := func(l int32) stmt { return stmt{kind: kMakeObject, b: l} }
	for _, tt := range []literalCase{
		{"a literal", 2, []stmt{mk(2), num(1, 3), insert(a, 3, 2), {kind: kAssignVar, a: x, b: 4}, insert(b, 4, 2)},
			`{"a": 1, "b": "x"}`, 1},
		{"a value given another after its insert", 2, []stmt{mk(2), num(1, 3), insert(a, 3, 2), num(2, 3), insert(b, 3, 2)},
			`{"a": 1, "b": 2}`, 0},
		{"a key twice: made at once up to it", 2, []stmt{mk(2), num(1, 3), insert(a, 3, 2), num(2, 4), insert(a, 4, 2)},
			`{"a": 2}`, 1},
		{"the object read before its last insert", 5, []stmt{mk(2), num(1, 3), insert(a, 3, 2), {kind: kAssignVar, a: 2, b: 5}, num(2, 4), insert(b, 4, 2)},
			`{"a": 1, "b": 2}`, 1},
		{"an object inside another", 2, []stmt{mk(2), mk(6), num(1, 3), insert(a, 3, 6), insert(b, 6, 2), insert(a, x, 2)},
			`{"a": "x", "b": {"a": 1}}`, 2},
		{"a key that is not a constant", 2, []stmt{mk(2), num(1, 3), {kind: kAssignVar, a: b, b: 4}, insert(4, 3, 2), insert(a, 3, 2)},
			`{"a": 1, "b": 1}`, 0},
		{"a statement that may leave the block", 2, []stmt{mk(2), num(1, 3), insert(a, 3, 2), {kind: kIsDefined, a: 3}, insert(b, 3, 2)},
			`{"a": 1, "b": 1}`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bl := &builder{prog: &Program{}, strings: []*ir.StringConst{{Value: "a"}, {Value: "b"}, {Value: "x"}}}
			madeBothWays(t, tt.stmts, tt.result, bl.fuseObjects, kMakeObjectItems, tt.want, tt.fused)
		})
	}
}

// literalCase is a list of statements that make literals, and what it
// gives.
type literalCase struct {
	name   string
	result int32 // the local whose value is the result
	stmts  []stmt
	want   string
	fused  int // literals made at once
}

// num makes the number n in local l.
func num(n int64, l int32) stmt { return stmt{kind: kMakeNumberInt, n: n, b: l} }

// madeBothWays runs stmts, whose result is local result, one member at a
// time and after fuse, which should make fused literals at once (the
// statement of kind made): both give want. Constants: -1 "a", -2 "b",
// -3 "x"; local 7 is the result's binding.
func madeBothWays(t *testing.T, stmts []stmt, result int32, fuse func([]stmt), made kind, want string, fused int) {
	t.Helper()
	run := func(fuse func([]stmt)) (ast.Value, int) {
		consts := []*ast.Term{ast.StringTerm("a"), ast.StringTerm("b"), ast.StringTerm("x")}
		all := append(slices.Clone(stmts), stmt{kind: kMakeObject, b: 7}, stmt{kind: kObjectInsert, a: -3, c: result, b: 7}, stmt{kind: kResultSetAdd, a: 7})
		fuse(all)
		n, items := 0, 0
		for i, s := range all {
			items = max(items, len(s.args)) // room for every literal made at once, the binding's too
			if s.kind == made && i < len(stmts) {
				n++
			}
		}
		p := &Program{locals: 8, consts: consts, blocks: []*block{{stmts: all}}, maxItems: items}
		v, err := p.Eval(context.Background(), ast.NewObject(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return v, n
	}
	w := ast.MustParseTerm(want).Value // the binding's value
	if v, _ := run(func([]stmt) {}); v.Compare(w) != 0 {
		t.Fatalf("one by one: %v, want %v", v, w)
	}
	v, n := run(fuse)
	if v.Compare(w) != 0 {
		t.Errorf("at once: %v, want %v", v, w)
	}
	if n != fused {
		t.Errorf("%d literals made at once, want %d", n, fused)
	}
}

// The harness's own decision is planned with its object literals made at
// once.
func TestHarnessPlanIsRewritten(t *testing.T) {
	mods := map[string]*ast.Module{}
	for _, f := range harnessrego.Policy() {
		m, err := ast.ParseModuleWithOpts(f.Name, string(f.Source), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		mods[f.Name] = m
	}
	c := ast.NewCompiler().WithEnablePrintStatements(false)
	if c.Compile(mods); c.Failed() {
		t.Fatal(c.Errors)
	}
	p, err := Compile(context.Background(), c, inmem.New(), "data.harness.decision")
	if err != nil {
		t.Fatal(err)
	}
	atOnce, oneByOne := 0, 0
	count := func(s *stmt) {
		switch s.kind {
		case kMakeObjectItems:
			atOnce++
		case kObjectInsert:
			oneByOne++
		}
	}
	for _, bl := range p.blocks {
		forEach(bl, count)
	}
	for _, fn := range p.funcs {
		for _, bl := range fn.blocks {
			forEach(bl, count)
		}
	}
	t.Logf("%d objects made at once; %d inserts left one by one", atOnce, oneByOne)
	if !p.bare {
		t.Error("the decision's result is bound in an object, not added bare")
	}
	// The check of the protect data against itself is worked out once.
	stale := false
	for _, fn := range p.funcs {
		if strings.HasSuffix(fn.name, "._protect_suspect_stale") {
			stale = fn.dataOnly
		}
	}
	if !stale {
		t.Error("_protect_suspect_stale is not a rule of the data alone")
	}
	// The decision's literals: one per way it decides, each with its
	// budget's four objects.
	if atOnce < 30 {
		t.Errorf("%d objects made at once, want 30 at least", atOnce)
	}
}

// An array literal made at once (fuseArrays) is the array its appends one
// by one make, and one is made at once only when that holds.
func TestArraysMadeAtOnce(t *testing.T) {
	// Constants: -1 "a", -2 "b". Locals: 2 the array, 3 to 6 values, 7
	// the result's binding.
	const a, b = -1, -2
	app := func(val, arr int32) stmt { return stmt{kind: kArrayAppend, a: val, b: arr} }
	mk := func(l int32) stmt { return stmt{kind: kMakeArray, b: l} }
	for _, tt := range []literalCase{
		{"a literal", 2, []stmt{mk(2), num(1, 3), app(3, 2), {kind: kAssignVar, a: a, b: 4}, app(4, 2), app(b, 2)},
			`[1, "a", "b"]`, 1},
		{"a value given another after its append", 2, []stmt{mk(2), num(1, 3), app(3, 2), num(2, 3), app(3, 2)},
			`[1, 2]`, 0},
		{"the array read before its last append", 5, []stmt{mk(2), app(a, 2), {kind: kAssignVar, a: 2, b: 5}, app(b, 2)},
			`["a", "b"]`, 1},
		{"an array inside another", 2, []stmt{mk(2), mk(6), num(1, 3), app(3, 6), app(6, 2), app(a, 2)},
			`[[1], "a"]`, 2},
		{"an inner array appended to after it is", 2, []stmt{mk(2), mk(6), app(6, 2), app(a, 6), app(b, 2)},
			`[["a"], "b"]`, 2},
		{"a statement that may leave the block", 2, []stmt{mk(2), num(1, 3), app(3, 2), {kind: kIsDefined, a: 3}, app(a, 2)},
			`[1, "a"]`, 1},
		{"the array made again", 2, []stmt{mk(2), app(a, 2), mk(2), app(b, 2)},
			`["b"]`, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			madeBothWays(t, tt.stmts, tt.result, fuseArrays, kMakeArrayItems, tt.want, tt.fused)
		})
	}
}

// A plan whose every result is a binding made right before it is added
// adds the value instead (bareResults); any other plan is left as it is.
// Either way Eval gives the query's value.
func TestBareResults(t *testing.T) {
	// Constants: -1 "x" (the binding's key), -2 "v". Local 2 the value, 3
	// the binding.
	for _, tt := range []struct {
		name  string
		stmts []stmt
		bare  bool
	}{
		{"a binding made at once", []stmt{{kind: kAssignVar, a: -2, b: 2}, {kind: kMakeObjectItems, b: 3, args: []int32{-1, 2}}, {kind: kResultSetAdd, a: 3}}, true},
		{"a binding made one member at a time", []stmt{{kind: kAssignVar, a: -2, b: 2}, {kind: kMakeObject, b: 3}, {kind: kObjectInsert, a: -1, c: 2, b: 3}, {kind: kResultSetAdd, a: 3}}, false},
		{"a value of a constant", []stmt{{kind: kMakeObjectItems, b: 3, args: []int32{-1, -2}}, {kind: kResultSetAdd, a: 3}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &Program{locals: 4, consts: []*ast.Term{ast.StringTerm("x"), ast.StringTerm("v")}, maxItems: 1,
				blocks: []*block{{stmts: slices.Clone(tt.stmts)}}}
			bareResults(p)
			if p.bare != tt.bare {
				t.Fatalf("bare %v, want %v", p.bare, tt.bare)
			}
			v, err := p.Eval(context.Background(), ast.NewObject(), Options{})
			if err != nil || v == nil || v.Compare(ast.String("v")) != 0 {
				t.Fatalf("Eval: %v, %v; want \"v\"", v, err)
			}
		})
	}
}
