// Package events is the record of what agents tried: harness events
// (BudgetWarning, BudgetExhausted, PolicyViolation, RoleChanged,
// BudgetReset) published on an in-process [Bus] and appended to a JSONL
// file, and a decision log in OPA's decision-log shape; and the [Mask]
// that keeps configured input paths out of both, with every value they
// hold.
//
// Files are appended one whole line per write, under an advisory lock that
// several processes share, so lines from concurrent writers never
// interleave or tear; files rotate by size, keeping a bounded number of old
// ones. Nothing here decides anything: the orchestrator emits, this
// package records.
package events
