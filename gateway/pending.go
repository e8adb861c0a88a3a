package gateway

import (
	"sync"

	"github.com/agentharness/harness/budget"
)

// pending tracks the charges still being made, per session. A call's
// charge (counting the tokens of its output, which takes about 10 ms per
// 100 KB, and writing the ledger) happens after its result is on its way to
// the agent; the session's next decision waits for it, so it never decides
// on stale counters.
type pending struct {
	mu  sync.Mutex
	wgs map[budget.Key]*sync.WaitGroup
	all sync.WaitGroup
}

// start registers a charge of k; call the returned func when it is made.
func (p *pending) start(k budget.Key) func() {
	p.mu.Lock()
	if p.wgs == nil {
		p.wgs = map[budget.Key]*sync.WaitGroup{}
	}
	wg, ok := p.wgs[k]
	if !ok {
		wg = &sync.WaitGroup{}
		p.wgs[k] = wg
	}
	wg.Add(1)
	p.all.Add(1)
	p.mu.Unlock()
	return func() {
		wg.Done()
		p.all.Done()
	}
}

// wait returns when the charges of k started so far are made.
func (p *pending) wait(k budget.Key) {
	p.mu.Lock()
	wg := p.wgs[k]
	p.mu.Unlock()
	if wg != nil {
		wg.Wait()
	}
}

// waitAll returns when every charge started so far is made.
func (p *pending) waitAll() { p.all.Wait() }
