package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// argumentsCases are arguments as agents send them, and shapes they might.
var argumentsCases = []string{
	`{}`,
	`{"path": "src/main.go"}`,
	`{"file_path": "a.go", "old_string": "x", "new_string": "y", "replace_all": false}`,
	`{"command": "go test ./...", "timeout": 120000, "description": null}`,
	`{"n": 1.5, "big": 12345678901234567890, "neg": -3, "exp": 1e300}`,
	`{"nested": {"a": [1, "two", {"three": 3}], "b": {}}, "list": [], "": ""}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16}`,
	`[1, 2]`,
	`"a string"`,
	`3`,
	`null`,
}

// checkArguments fails unless argumentsValue of x is InterfaceToValue's.
func checkArguments(t *testing.T, x any) {
	t.Helper()
	want, werr := ast.InterfaceToValue(x)
	got, gerr := argumentsValue(x)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%v: error %v, want %v", x, gerr, werr)
	}
	if werr != nil {
		return
	}
	if ast.Compare(got, want) != 0 || got.String() != want.String() || got.Hash() != want.Hash() {
		t.Errorf("got %v, want %v", got, want)
	}
}

// The arguments' value is InterfaceToValue's, whichever way the agent's
// JSON was decoded (numbers as float64 or json.Number), and for Go
// values InterfaceToValue converts by a round trip.
func TestArgumentsValueIsOPAs(t *testing.T) {
	t.Parallel()
	for _, raw := range argumentsCases {
		for _, useNumber := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%v", raw, useNumber), func(t *testing.T) {
				checkArguments(t, decodeArguments(t, raw, useNumber))
			})
		}
	}
	checkArguments(t, map[string]any{"s": []string{"a"}, "m": map[string]string{"k": "v"}, "i": 7, "u": uint64(1 << 63)})
	checkArguments(t, map[string]any{"f": func() {}}) // an error, both ways
	checkArguments(t, map[string]any{strings.Repeat("k", maxNameTerm+1): 1})
}

// Arguments of a few keys cost fewer allocations than InterfaceToValue's.
func TestArgumentsValueAllocations(t *testing.T) {
	x := decodeArguments(t, argumentsCases[2], false)
	argumentsValue(x) // the keys' terms kept
	got := testing.AllocsPerRun(100, func() { _, _ = argumentsValue(x) })
	want := testing.AllocsPerRun(100, func() { _, _ = ast.InterfaceToValue(x) })
	if got >= want {
		t.Errorf("%v allocations, InterfaceToValue's %v", got, want)
	}
}

func FuzzArgumentsValueIsOPAs(f *testing.F) {
	for _, raw := range argumentsCases {
		f.Add(raw, false)
	}
	f.Fuzz(func(t *testing.T, raw string, useNumber bool) {
		var x any
		if err := decode(raw, useNumber, &x); err != nil {
			return
		}
		checkArguments(t, x)
	})
}

func decodeArguments(t *testing.T, raw string, useNumber bool) any {
	t.Helper()
	var x any
	if err := decode(raw, useNumber, &x); err != nil {
		t.Fatal(err)
	}
	return x
}

func decode(raw string, useNumber bool, x *any) error {
	if useNumber {
		return util.UnmarshalJSON([]byte(raw), x)
	}
	return json.Unmarshal([]byte(raw), x)
}
