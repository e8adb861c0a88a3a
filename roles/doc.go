// Package roles is the first stage of the harness: it reads role files (TOML),
// validates them strictly, finds them on disk (built-in, user and project
// directories), and resolves inheritance key by key, remembering which file
// set every resolved field.
//
// It knows nothing of Rego, budgets or decisions: its output, a [Set] of
// resolved roles, is plain data that the compiler turns into a policy data
// document.
package roles
