package policy

import (
	"flag"
	"os"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/roles"
)

var update = flag.Bool("update", false, "rewrite golden files (rego/fixture_test.rego)")

// fixturePath is the compiled data the harness's own Rego tests decide
// with, whatever roles and configuration the bundle they ship in has.
const fixturePath = "../rego/fixture_test.rego"

const fixtureHeader = `# The data the harness's own Rego tests decide with (see harness_test.rego):
# the built-in roles and those of rego/testdata/roles, and the default
# configuration, as the compiler makes them. Written by
#   go test ./policy -run TestRegoFixture -update
# from those files; do not edit it by hand.
package harness.tests

fixture := `

// fixtureConfig is the configuration of the Rego tests' fixture: the
// default, with two agents that have budgets across their sessions.
func fixtureConfig() compiler.Config {
	cfg := compiler.DefaultConfig()
	n := func(v int64) *int64 { return &v }
	cfg.AgentBudgets = map[string]compiler.AgentBudget{
		"budgeted":     {Period: "day", Tokens: n(1000), Shell: n(3), CostMicros: n(1_000_000), WarnPercent: 80, BlockPercent: 100},
		"capped-total": {Period: "total", Shell: n(2), WarnPercent: 50, BlockPercent: 100},
	}
	return cfg
}

// The Rego tests' fixture is the compiler's output for its role files: a
// change of the compiler or of those files fails here until the fixture is
// written again.
func TestRegoFixture(t *testing.T) {
	set, err := roles.Load(roles.Dirs{User: []string{"../rego/testdata/roles"}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := compiler.Compile(set, fixtureConfig()).JSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := format.SourceWithOpts(fixturePath, append([]byte(fixtureHeader), data...), format.Opts{RegoVersion: ast.RegoV1})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(fixturePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatalf("%v (go test ./policy -run TestRegoFixture -update writes it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s is not the compiler's output for rego/testdata/roles: go test ./policy -run TestRegoFixture -update writes it again", fixturePath)
	}
}
