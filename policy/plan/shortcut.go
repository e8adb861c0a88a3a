package plan

import "github.com/open-policy-agent/opa/v1/ast"

// shortcuts answer, without OPA's implementation, calls of a built-in
// whose answer OPA's implementation gives by a long way round, where the
// answer is known to be the one it gives (TestShortcutsAreOPAs and
// FuzzShortcutsAreOPAs hold them to it). A shortcut returns nil for any
// other call, which OPA's implementation then answers (its errors
// included).
var shortcuts = map[string]func(args []*ast.Term) *ast.Term{
	"div": zeroQuotient,
}

// zeroQuotient answers 0 / y for a whole y from 1 to 2^31-1. OPA divides
// whole numbers in that range as integers, but a zero dividend it divides
// as floats (a quotient of -0 needs them), parsing both operands into
// big.Floats: the percent of a budget not yet used, which most decisions
// work out, took a microsecond. The quotient of a dividend spelled "0"
// (not "-0", nor "0.0") by such a divisor is 0, spelled "0".
func zeroQuotient(args []*ast.Term) *ast.Term {
	if x, ok := args[0].Value.(ast.Number); !ok || x != "0" {
		return nil
	}
	y, ok := args[1].Value.(ast.Number)
	if !ok {
		return nil
	}
	if n, ok := y.Int64(); !ok || n < 1 || n > 1<<31-1 {
		return nil
	}
	return ast.InternedTerm(0)
}
