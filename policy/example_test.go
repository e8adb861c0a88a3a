package policy_test

import (
	"context"
	"fmt"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// Load the roles, compile them, prepare the engine once, and decide calls.
func ExampleEngine_Decide() {
	ctx := context.Background()
	set, err := roles.Load(roles.Dirs{}) // built-in roles only
	if err != nil {
		panic(err)
	}
	engine, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		panic(err)
	}
	d, _ := engine.Decide(ctx, contract.Input{
		Role:   "reviewer",
		Tool:   "ctx_shell",
		Budget: contract.Usage{Tokens: 50000, CostMicros: 500000},
	})
	fmt.Println(d.Decision, d.Reasons[0].Code)
	fmt.Println(d.StatusLine())

	d, _ = engine.Decide(ctx, contract.Input{Role: "coder", Tool: "ctx_read", Budget: contract.Usage{Tokens: 170000}})
	fmt.Println(d.Decision, d.Warnings[0].Message)
	// Output:
	// deny tool_denied
	// Budget[reviewer]: tokens 50000/150000 (33%) | shell 0/0 (0%) | cost $0.50/$3.00 (16%) → OK
	// warn tokens at 85% of the budget of role 'coder' (170000 of 200000)
}
