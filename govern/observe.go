package govern

import (
	"time"

	"github.com/agentharness/harness/contract"
)

// Observer hears what a governor decides and charges, as it happens: the
// harness's metrics. Its methods run on the path of a tool call and must
// return at once.
type Observer interface {
	// Decided is one decision of a tool call (Decide), and how long it
	// took, from reading the session's counters to taking its shell slot;
	// err is a call that could not be decided (the ledger failed), whose
	// decision is then the zero one.
	Decided(d contract.Decision, took time.Duration, err error)
	// Charged is usage added to a session of agent, in role: context
	// tokens and cost (micro-dollars) of a settled or recorded output,
	// and shell slots (+1 taken for a call, -1 given back by a call that
	// never reached its tool).
	Charged(agent, role string, u contract.Usage)
}

// noObserver hears nothing.
type noObserver struct{}

func (noObserver) Decided(contract.Decision, time.Duration, error) {}
func (noObserver) Charged(string, string, contract.Usage)          {}
