package plan

import (
	"context"
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
