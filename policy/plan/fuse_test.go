package plan

import (
	"context"
	"slices"
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
	num := func(n int64, l int32) stmt { return stmt{kind: kMakeNumberInt, n: n, b: l} }
	mk := func(l int32) stmt { return stmt{kind: kMakeObject, b: l} }
	for _, tt := range []struct {
		name   string
		result int32 // the local whose value is the result
		stmts  []stmt
		want   string
		fused  int // objects made at once
	}{
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
			run := func(fuse bool) (ast.Value, int) {
				bl := &builder{prog: &Program{}, strings: []*ir.StringConst{{Value: "a"}, {Value: "b"}, {Value: "x"}}}
				for _, s := range bl.strings {
					bl.prog.consts = append(bl.prog.consts, ast.StringTerm(s.Value))
				}
				stmts := append(slices.Clone(tt.stmts), stmt{kind: kMakeObject, b: 7}, insert(x, tt.result, 7), stmt{kind: kResultSetAdd, a: 7})
				if fuse {
					bl.fuseObjects(stmts)
				}
				n := 0
				for _, s := range stmts[:len(tt.stmts)] {
					if s.kind == kMakeObjectItems {
						n++
					}
				}
				p := &Program{locals: 8, consts: bl.prog.consts, blocks: []*block{{stmts: stmts}}, maxItems: bl.prog.maxItems}
				v, err := p.Eval(context.Background(), ast.NewObject(), Options{})
				if err != nil {
					t.Fatal(err)
				}
				return v, n
			}
			want := ast.MustParseTerm(tt.want).Value // the binding's value
			if v, _ := run(false); v.Compare(want) != 0 {
				t.Fatalf("one by one: %v, want %v", v, want)
			}
			v, n := run(true)
			if v.Compare(want) != 0 {
				t.Errorf("at once: %v, want %v", v, want)
			}
			if n != tt.fused {
				t.Errorf("%d objects made at once, want %d", n, tt.fused)
			}
		})
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
	var count func(blocks []*block)
	count = func(blocks []*block) {
		for _, bl := range blocks {
			for _, s := range bl.stmts {
				switch s.kind {
				case kMakeObjectItems:
					atOnce++
				case kObjectInsert:
					oneByOne++
				}
				count(s.blocks)
				if s.body != nil {
					count([]*block{s.body})
				}
			}
		}
	}
	count(p.blocks)
	for _, fn := range p.funcs {
		count(fn.blocks)
	}
	t.Logf("%d objects made at once; %d inserts left one by one", atOnce, oneByOne)
	// The decision's literals: one per way it decides, each with its
	// budget's four objects.
	if atOnce < 30 {
		t.Errorf("%d objects made at once, want 30 at least", atOnce)
	}
}
