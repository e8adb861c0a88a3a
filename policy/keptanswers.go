package policy

import (
	"sync"
	"sync/atomic"
)

// keptAnswers keeps the answers of a function of a string (one whose
// answer depends on the string alone) for the first max strings asked
// of; past them, an answer is worked out each time, so that whoever
// chooses the strings (an agent's tool names, a policy's patterns) cannot
// grow it without bound.
type keptAnswers[V any] struct {
	max int64
	m   sync.Map // string -> V
	n   atomic.Int64
}

// get is the answer of f for key, kept or worked out (and kept while
// there is room).
func (k *keptAnswers[V]) get(key string, f func(string) V) V {
	if v, ok := k.m.Load(key); ok {
		return v.(V)
	}
	v := f(key)
	if k.n.Load() < k.max {
		if _, loaded := k.m.LoadOrStore(key, v); !loaded {
			k.n.Add(1)
		}
	}
	return v
}
