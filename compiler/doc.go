// Package compiler is the second stage: it turns resolved roles
// ([roles.Set]) into one versioned data document for the Rego policy, and
// writes OPA bundle directories.
//
// The document is plain data with a schema_version, byte-for-byte repeatable
// for the same roles, and shaped for fast evaluation: each list of tool
// patterns as one regular expression (beside its exact names), the
// thresholds of each budget dimension in integers (with the usage below
// which a dimension is clear), money in integer micro-dollars, and one
// expression that finds what the self-protection rules may refuse. The
// compiler never evaluates anything and does not import the engine.
package compiler
