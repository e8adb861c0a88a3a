package plan

import (
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The shortcuts answer as OPA does of numbers as a policy's input holds
// them: an agent's arguments are decoded with UseNumber, so a number comes
// spelled as the agent wrote it ("-0", "1.0", "3000000000.000", 19 digits)
// rather than as a Rego literal (TestShortcutsAreOPAs, the fuzzer).
func TestShortcutsAreOPAsOfInputNumbers(t *testing.T) {
	nums := []string{"0", "-0", "-0.0", "1.0", "1.00000", "-1.0", "3000000000.0", "-3000000000.000", "9223372036854775807", "-9223372036854775808",
		"922337203685477580.7", "92233720368547758.00", "2147483648", "-2147483649", "2147483647", "-2147483648", "4294967296", "1.5", "1e3", "0.0",
		"9999999999999999999", "-9999999999999999999", "1000000000000000000", "-1000000000000000000", "5000000000", "1844674407370955161", "3037000499", "-3037000500"}
	for name, short := range shortcuts {
		for _, x := range nums {
			for _, y := range nums {
				xv, err := ast.InterfaceToValue(json.Number(x))
				if err != nil {
					t.Fatal(err)
				}
				yv, _ := ast.InterfaceToValue(json.Number(y))
				args := []*ast.Term{ast.NewTerm(xv), ast.NewTerm(yv)}
				if got := short(args); got != nil {
					if want := opas(t, name, args); got.String() != want {
						t.Errorf("%s(%s, %s) = %s, OPA's %s", name, x, y, got, want)
					}
				}
			}
		}
	}
}
