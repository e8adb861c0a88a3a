package roles_test

import (
	"fmt"

	"github.com/agentharness/harness/roles"
)

// Parse a role file and resolve it over the built-ins: keys it leaves out
// come from its parent, each with the file that set it.
func ExampleLoadDefs() {
	src := []byte("[role]\ninherits = \"reviewer\"\n\n[limits]\nmax_context_tokens = 20000\n")
	def, errs := roles.Parse("tight-reviewer.toml", src, roles.SourceProject)
	if len(errs) > 0 {
		panic(errs)
	}
	set, err := roles.LoadDefs(def)
	if err != nil {
		panic(err)
	}
	r, _ := set.Get("tight-reviewer")
	fmt.Println(r.Limits.MaxContextTokens, r.Origin["limits.max_context_tokens"])
	fmt.Println(r.Limits.MaxCostMicros, r.Origin["limits.max_cost_usd"])
	// Output:
	// 20000 tight-reviewer.toml
	// 3000000 builtin:reviewer.toml
}
