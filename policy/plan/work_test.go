package plan

import (
	"context"
	"errors"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// opas is OPA's own answer to a call of built-in name: its value's
// spelling, or "error".
func opas(t testing.TB, name string, args []*ast.Term) string {
	t.Helper()
	var out *ast.Term
	err := topdown.GetBuiltin(name)(topdown.BuiltinContext{Context: context.Background()}, args, func(v *ast.Term) error {
		out = v
		return nil
	})
	if err != nil {
		return "error"
	}
	return out.String()
}

// number is raw as a term: a number spelled as written, else a string.
func number(raw string) *ast.Term {
	if _, err := ast.ParseTerm(raw); err == nil {
		if n, ok := ast.MustParseTerm(raw).Value.(ast.Number); ok {
			return ast.NewTerm(n)
		}
	}
	return ast.StringTerm(raw)
}

func TestShortcutsAreOPAs(t *testing.T) {
	for _, tt := range []struct {
		name, x, y string
		short      bool // the shortcut answers it
	}{
		{"div", "0", "1", true},
		{"div", "0", "7", true},
		{"div", "0", "100", true},
		{"div", "0", "2147483647", true},
		{"div", "0", "2147483648", false}, // OPA divides it as floats: its answer
		{"div", "0", "-1", false},         // -0
		{"div", "-0", "5", false},         // -0
		{"div", "0.0", "5", false},
		{"div", "0e3", "5", false},
		{"div", "0", "0", false}, // OPA's error
		{"div", "0", "0.5", false},
		{"div", "0", "1e2", false},
		{"div", "0", "5.0", true}, // OPA reads 5.0 as the integer 5 too
		{"div", "6", "3", false},
		{"div", "7", "2", false},
		{"div", "0", `"5"`, false}, // a string: OPA's type error
		{"div", `"0"`, "5", false},
	} {
		args := []*ast.Term{number(tt.x), number(tt.y)}
		got := shortcuts[tt.name](args)
		if (got != nil) != tt.short {
			t.Errorf("%s(%s, %s): shortcut %v, want it %v", tt.name, tt.x, tt.y, got, tt.short)
			continue
		}
		if want := opas(t, tt.name, args); got != nil && got.String() != want {
			t.Errorf("%s(%s, %s) = %s, OPA's %s", tt.name, tt.x, tt.y, got, want)
		}
	}
}

// A shortcut's every answer is OPA's, to the spelling of its number.
func FuzzShortcutsAreOPAs(f *testing.F) {
	for _, s := range [][2]string{{"0", "5"}, {"-0", "5"}, {"0", "-5"}, {"0", "2147483647"}, {"0", "0"}, {"0.0", "3"}, {"1", "3"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		args := []*ast.Term{number(x), number(y)}
		for name, short := range shortcuts {
			if got := short(args); got != nil {
				if want := opas(t, name, args); got.String() != want {
					t.Fatalf("%s(%s, %s) = %s, OPA's %s", name, x, y, got, want)
				}
			}
		}
	})
}

// The shortcuts are the plan's: a program that divides calls them.
func TestPlanTakesTheShortcuts(t *testing.T) {
	_, p, err := fixture(t, "package t\nx := input.a / input.b", "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range p.funcs {
		for _, b := range f.blocks {
			found = found || usesShortcut(b)
		}
	}
	for _, b := range p.blocks {
		found = found || usesShortcut(b)
	}
	if !found {
		t.Fatal("no call of div in the plan has its shortcut")
	}
}

func usesShortcut(b *block) bool {
	for _, s := range b.stmts {
		if s.kind == kCallBuiltin && s.bi.name == "div" && s.bi.short != nil {
			return true
		}
		for _, inner := range append(s.blocks, s.body) {
			if inner != nil && usesShortcut(inner) {
				return true
			}
		}
	}
	return false
}

// The empty set literals of a plan are one set, which no evaluation
// changes: an add to it fails the evaluation instead.
func TestEmptySetsAreShared(t *testing.T) {
	_, p, err := fixture(t, "package t\ns contains 1 if input.a\nx if { s != set(); input.b != set() }", "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	makes, shared := 0, 0
	for _, f := range p.funcs {
		for _, b := range f.blocks {
			forStmts(b, func(s *stmt) {
				switch {
				case s.kind == kMakeSet:
					makes++
				case s.kind == kAssignVar && p.emptySet != 0 && s.a == p.emptySet:
					shared++
				}
			})
		}
	}
	if makes != 1 || shared != 2 {
		t.Fatalf("%d sets made (want 1, the one added to), %d shared (want 2)", makes, shared)
	}

	// A plan that adds to a local given the shared set (none OPA
	// plans) fails, and leaves the set empty.
	bad := &Program{consts: append(p.consts[:len(p.consts):len(p.consts)], ast.IntNumberTerm(1)), emptySet: p.emptySet, locals: 3}
	one := -int32(len(bad.consts))
	bad.blocks = []*block{{stmts: []stmt{{kind: kAssignVar, a: p.emptySet, b: 2}, {kind: kSetAdd, a: one, b: 2}}}}
	if _, err := bad.Eval(context.Background(), ast.NewObject(), Options{}); !errors.Is(err, errSharedSet) {
		t.Fatalf("an add to the shared set: %v, want %v", err, errSharedSet)
	}
	if n := p.consts[-1-p.emptySet].Value.(ast.Set).Len(); n != 0 {
		t.Fatalf("the shared set has %d members", n)
	}
}

func forStmts(b *block, f func(*stmt)) {
	for i := range b.stmts {
		f(&b.stmts[i])
		for _, inner := range b.stmts[i].blocks {
			forStmts(inner, f)
		}
		if b.stmts[i].body != nil {
			forStmts(b.stmts[i].body, f)
		}
	}
}

// Options.Steps counts the statements an evaluation runs: more for an
// input that takes a longer way, added up across evaluations.
func TestStepsAreCounted(t *testing.T) {
	_, p, err := fixture(t, "package t\nx := 1 if { input.a; input.b; input.c }", "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	count := func(raw string) int64 {
		in, _ := document(raw)
		var n int64
		if _, err := p.Eval(context.Background(), in, Options{Steps: &n}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	short, long := count(`{"a": false}`), count(`{"a": true, "b": true, "c": true}`)
	if short <= 0 || long <= short {
		t.Fatalf("%d statements for a call that stops at once, %d for one that goes on", short, long)
	}
	var n int64
	in, _ := document(`{"a": false}`)
	for range 3 {
		p.Eval(context.Background(), in, Options{Steps: &n})
	}
	if n != 3*short {
		t.Fatalf("three evaluations: %d statements, want %d", n, 3*short)
	}
}
