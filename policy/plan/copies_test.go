package plan

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A copy is dropped (dropCopies) only where reading its source instead
// gives the same answer, and the plan gives the same result either way.
func TestCopiesDropped(t *testing.T) {
	// Constants: -1 "a", -2 "b", -3 "x". Local 0 is the input, {"a": 1,
	// "b": [2]}; local 9 is the result, an array of what the statements
	// leave in it.
	const a, b, x = -1, -2, -3
	cp := func(src, dst int32) stmt { return stmt{kind: kAssignVar, a: src, b: dst} }
	dot := func(src, key, dst int32) stmt { return stmt{kind: kDot, a: src, c: key, b: dst} }
	app := func(v int32) stmt { return stmt{kind: kArrayAppend, a: v, b: 9} }
	blk := func(stmts ...stmt) stmt { return stmt{kind: kBlock, blocks: []*block{{stmts: stmts}}} }
	for _, tt := range []struct {
		name    string
		stmts   []stmt
		want    string
		dropped int
	}{
		{"a copy of the input", []stmt{cp(0, 3), dot(3, a, 4), app(4)}, `[1]`, 1},
		{"a copy of the input in each of two blocks", []stmt{blk(cp(0, 3), dot(3, a, 4), app(4)), blk(cp(0, 3), dot(3, b, 4), app(4))},
			`[1, [2]]`, 2},
		{"read before its copy", []stmt{blk(stmt{kind: kIsDefined, a: 3}, app(x)), cp(0, 3), app(3)}, `[{"a": 1, "b": [2]}]`, 0},
		{"read after its copy's block", []stmt{blk(cp(0, 3)), blk(stmt{kind: kIsDefined, a: 3}, app(x)), app(x)}, `["x", "x"]`, 0},
		{"copies of two sources", []stmt{cp(0, 3), app(3), blk(dot(0, a, 5), cp(5, 3), app(3))}, `[{"a": 1, "b": [2]}, 1]`, 0},
		{"a copy of a value made once before it", []stmt{dot(0, b, 3), cp(3, 4), dot(4, -4, 5), app(5)}, `[2]`, 1},
		{"a copy of a copy", []stmt{dot(0, a, 3), cp(3, 4), cp(4, 5), app(5)}, `[1]`, 2},
		{"a copy read in a later statement's block", []stmt{dot(0, a, 3), cp(3, 4), blk(app(4))}, `[1]`, 1},
		{"a copy made in a block, read after it", []stmt{dot(0, a, 3), blk(cp(3, 4)), app(4)}, `[1]`, 0},
		{"a source given two values", []stmt{dot(0, a, 3), cp(3, 4), dot(0, b, 3), app(4), app(3)}, `[1, [2]]`, 0},
		{"a copy of a scan's value", []stmt{dot(0, b, 6), {kind: kScan, a: 6, b: 7, c: 3, body: &block{stmts: []stmt{cp(3, 4), app(4)}}}},
			`[2]`, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := func(drop bool) (ast.Value, int) {
				stmts := append([]stmt{{kind: kMakeArray, b: 9}}, cloneStmts(tt.stmts)...)
				stmts = append(stmts, stmt{kind: kResultSetAdd, a: 9})
				blocks := []*block{{stmts: stmts}}
				copies := countKind(blocks, kAssignVar)
				if drop {
					dropCopies(blocks, []int32{0, 1})
					dropNops(blocks)
				}
				consts := []*ast.Term{ast.StringTerm("a"), ast.StringTerm("b"), ast.StringTerm("x"), ast.InternedTerm(0)}
				p := &Program{locals: 10, consts: consts, blocks: blocks, bare: true}
				v, err := p.Eval(context.Background(), ast.MustParseTerm(`{"a": 1, "b": [2]}`).Value, Options{})
				if err != nil {
					t.Fatal(err)
				}
				return v, copies - countKind(blocks, kAssignVar)
			}
			want := ast.MustParseTerm(tt.want).Value
			if v, _ := run(false); v == nil || v.Compare(want) != 0 {
				t.Fatalf("as planned: %v, want %v", v, want)
			}
			v, n := run(true)
			if v == nil || v.Compare(want) != 0 {
				t.Errorf("copies dropped: %v, want %v", v, want)
			}
			if n != tt.dropped {
				t.Errorf("%d copies dropped, want %d", n, tt.dropped)
			}
		})
	}
}

// cloneStmts copies statements and the blocks in them, for a case to run
// them twice.
func cloneStmts(stmts []stmt) []stmt {
	out := make([]stmt, len(stmts))
	for i, s := range stmts {
		out[i] = s
		out[i].blocks = nil
		for _, bl := range s.blocks {
			out[i].blocks = append(out[i].blocks, &block{stmts: cloneStmts(bl.stmts)})
		}
		if s.body != nil {
			out[i].body = &block{stmts: cloneStmts(s.body.stmts)}
		}
	}
	return out
}

// countKind is the number of statements of kind k in blocks.
func countKind(blocks []*block, k kind) int {
	n := 0
	for _, bl := range blocks {
		forEach(bl, func(s *stmt) {
			if s.kind == k {
				n++
			}
		})
	}
	return n
}
