// Package policy is the evaluation stage: the embedded OPA engine that turns
// one tool call ([Input]) into a [Decision], from the compiled role data and
// the Rego policy.
//
// The query is prepared once and evaluated many times; [Engine.Decide] is
// safe for concurrent use and pure given the loaded data: it never touches
// counters, files or events (the orchestrating caller does). New data is
// swapped in atomically by [Engine.Reload] while decisions are in flight.
// Anything that goes wrong inside an evaluation is a deny that names the
// problem: the engine fails closed.
package policy
