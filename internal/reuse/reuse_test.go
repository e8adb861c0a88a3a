package reuse

import (
	"sync"
	"testing"
	"time"
)

// Every function runs, concurrently: none waits for another to end; and
// no more than maxIdle goroutines stay to wait for more.
func TestGoRunsAllConcurrently(t *testing.T) {
	const n = 100
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	var done sync.WaitGroup
	done.Add(n)
	for range n {
		Go(func() {
			started.Done()
			release.Wait() // ends only once all have started
			done.Done()
		})
	}
	started.Wait()
	release.Done()
	done.Wait()
	// A few of them wait for more, the rest have ended.
	for deadline := time.Now().Add(5 * time.Second); idle.Load() > maxIdle; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines idle, want at most %d", idle.Load(), maxIdle)
		}
	}
	done.Add(n)
	for range n {
		Go(done.Done)
	}
	done.Wait()
}
