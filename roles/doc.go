// Package roles is the first stage of the harness: it reads role files (TOML),
// validates them strictly, finds them on disk (built-in, user and project
// directories), and resolves inheritance key by key, remembering which file
// set every resolved field.
//
// It also finds the project: its root is the outermost directory holding
// .git or .lean-ctx from the working directory up (never the home
// directory), and every .lean-ctx on the way is a layer. Layers only add:
// a project's role may not take a name that a user's role, a built-in or
// another layer already has.
//
// It knows nothing of Rego, budgets or decisions: its output, a [Set] of
// resolved roles, is plain data that the compiler turns into a policy data
// document.
package roles
