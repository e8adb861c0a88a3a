// Package testroles builds role sets for tests: the built-ins plus roles
// given as TOML text, as a project directory would hold them.
package testroles

import (
	"maps"
	"slices"
	"testing"

	"github.com/agentharness/harness/roles"
)

// Set returns the built-ins and the roles of files (role name → TOML),
// failing the test on any error.
func Set(t testing.TB, files map[string]string) *roles.Set {
	t.Helper()
	var defs []*roles.Def
	for _, name := range slices.Sorted(maps.Keys(files)) {
		d, errs := roles.Parse(name+".toml", []byte(files[name]), roles.SourceProject)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		defs = append(defs, d)
	}
	set, err := roles.LoadDefs(defs...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}
