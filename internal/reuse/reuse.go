// Package reuse runs functions on goroutines that ran others before.
//
// A governed call runs the policy, whose evaluation recurses deeply: on a
// new goroutine, whose stack starts at a few kilobytes, that grows the
// stack again and again, each time copying it, which took about a quarter
// of the gateway's time on a small call. A goroutine that ran a call
// before has its stack grown already (the runtime shrinks an idle one at
// most by half per garbage collection), so the gateway hands each call,
// and the work behind it, to such a goroutine when one is idle.
package reuse

import (
	"sync/atomic"
	"time"
)

// idleFor is how long an idle goroutine waits for more work before it
// ends, and maxIdle how many may wait at once (more end at once): a few,
// so that a gateway that is not working holds hardly more goroutines than
// before its load.
const (
	idleFor = 5 * time.Second
	maxIdle = 3
)

// idle counts the goroutines waiting for work.
var idle atomic.Int32

// work hands a function to an idle goroutine (unbuffered: only one that
// waits takes it).
var work = make(chan func())

// Go runs f on an idle goroutine, or on a new one when none is idle: as
// the go statement, f runs concurrently with the caller and with every
// other f, however many there are.
func Go(f func()) {
	select {
	case work <- f:
	default:
		go run(f)
	}
}

// run runs f, then what it is handed, until it has been idle for idleFor
// or finds maxIdle others idle.
func run(f func()) {
	var t *time.Timer
	for {
		f()
		if idle.Add(1) > maxIdle {
			idle.Add(-1)
			return
		}
		if t == nil {
			t = time.NewTimer(idleFor)
			defer t.Stop()
		} else {
			t.Reset(idleFor)
		}
		select {
		case f = <-work:
			idle.Add(-1)
		case <-t.C:
			idle.Add(-1)
			return
		}
	}
}
