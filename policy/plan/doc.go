// Package plan evaluates a Rego query from the plan OPA compiles it to.
//
// OPA's planner (the stage behind its Wasm target) turns a query and the
// modules it reads into an [ir.Policy]: functions of blocks of simple
// statements (look up a key, compare two values, call a built-in, loop
// over a collection) with every rule's semantics, conflicts and defaults
// worked out. OPA hands that plan to a registered target plugin; this
// package is such a plugin, and an interpreter of the plan in Go. What it
// runs is OPA's: the plan is OPA's compilation of the policy, and every
// built-in call is OPA's own implementation (topdown's). What it saves is
// the work topdown does to unify and backtrack, which a plan has already
// compiled away.
//
// The interpreter follows the semantics OPA's Wasm compiler gives each
// statement (internal/compiler/wasm in OPA): a block ends at its first
// undefined statement, a break leaves that many enclosing blocks, a
// function of the input and data alone is evaluated once per query. A with
// statement runs its block on a copy of the input or data changed along
// its path, as topdown's with does (OPA's planner has already replaced
// the rules and functions it mocks). A plan that needs what the
// interpreter does not do (a dynamic call, a built-in that is not a pure
// function of its arguments) is refused by [Compile]; its caller evaluates
// that query with topdown.
//
// A value from [Program.Eval] is topdown's value. Where a query has none,
// the two may differ in how: a plan evaluates the members of an object or
// array in another order than topdown, so where one member is undefined
// and another's built-in fails, one finds the error and the other nothing.
// A caller that must give OPA's exact answer then (the harness's engine
// does) evaluates with topdown whenever a plan gives no value.
package plan
