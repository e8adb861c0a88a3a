package plan

import (
	"math"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
)

// shortcuts answer, without OPA's implementation, calls of a built-in
// whose answer OPA's implementation gives by a long way round, where the
// answer is known to be the one it gives (TestShortcutsAreOPAs and
// FuzzShortcutsAreOPAs hold them to it). A shortcut returns nil for any
// other call, which OPA's implementation then answers (its errors
// included).
var shortcuts = map[string]func(args []*ast.Term) *ast.Term{
	"div":   zeroQuotient,
	"minus": wholeOp(func(x, y int64) (int64, bool) { r := x - y; return r, (r < x) == (y > 0) }),
	"plus":  wholeOp(func(x, y int64) (int64, bool) { r := x + y; return r, (r > x) == (y > 0) }),
	"mul": wholeOp(func(x, y int64) (int64, bool) {
		if x == 0 || y == 0 {
			return 0, true
		}
		r := x * y
		return r, r/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64)
	}),
}

// wholeOp answers an operation on two numbers that are whole and within
// int64, whose result op works out, and reports, is too (it overflows
// not). OPA works such numbers out as ints only within the int32 window;
// past it, each operand is parsed into a big.Int, and the result printed
// from one: a budget's thresholds in tokens and micro-dollars, which an
// allowance takes usage from, are often past it. Both spell the result
// the same: its decimal digits. Anything else (a fraction, an exponent,
// a set, a string) OPA answers.
func wholeOp(op func(x, y int64) (int64, bool)) func(args []*ast.Term) *ast.Term {
	return func(args []*ast.Term) *ast.Term {
		x, ok := args[0].Value.(ast.Number)
		if !ok {
			return nil
		}
		y, ok := args[1].Value.(ast.Number)
		if !ok {
			return nil
		}
		a, ok := x.Int64()
		if !ok {
			return nil
		}
		b, ok := y.Int64()
		if !ok {
			return nil
		}
		r, ok := op(a, b)
		if !ok {
			return nil
		}
		if int64(int(r)) == r {
			return ast.IntNumberTerm(int(r))
		}
		return ast.NewTerm(ast.Number(strconv.FormatInt(r, 10)))
	}
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
