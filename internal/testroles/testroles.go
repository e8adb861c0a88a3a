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
// as a project's, failing the test on any error.
func Set(t testing.TB, files map[string]string) *roles.Set {
	t.Helper()
	return of(t, files, roles.SourceProject)
}

// UserSet is Set with the roles of files as a user's: roles that are in
// effect beyond an agent's ceiling, which a project's are not (see the
// governor's heldBeyond).
func UserSet(t testing.TB, files map[string]string) *roles.Set {
	t.Helper()
	return of(t, files, roles.SourceUser)
}

func of(t testing.TB, files map[string]string, source roles.Source) *roles.Set {
	t.Helper()
	var defs []*roles.Def
	for _, name := range slices.Sorted(maps.Keys(files)) {
		d, errs := roles.Parse(name+".toml", []byte(files[name]), source)
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
