// Package compiler is the second stage: it turns resolved roles
// ([roles.Set]) into one versioned data document for the Rego policy, and
// writes OPA bundle directories.
//
// The document is plain data with a schema_version, byte-for-byte repeatable
// for the same roles, and shaped for fast evaluation: exact tool names in
// sets, wildcard patterns split into prefixes, suffixes and (rarely) globs,
// money in integer micro-dollars. The compiler never evaluates anything and
// does not import the engine.
package compiler
