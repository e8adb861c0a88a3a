// Package budget is the ledger: the live usage counters of every session
// (context tokens, shell invocations, cost in integer micro-dollars) and its
// active role, kept in a [Store] (memory, an embedded SQLite file, or Redis),
// plus token counting (o200k_base) and cost estimation from a price table.
//
// It knows nothing of roles or policies. Usage only grows: a shell slot is
// taken by a compare-and-swap on the counters a decision was made on
// ([Store.ReserveShell]), tokens and cost are added after a call
// ([Store.Charge]), and only the operator's [Store.Reset] sets usage back
// to zero.
package budget
