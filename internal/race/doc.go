// Package race tells whether the binary was built with the race
// detector. Tests use it to run a sample of their longest grids there,
// where every step costs several times as much and what the detector
// checks, concurrency, does not grow with a grid's size; make test-grids
// runs them whole without it.
package race

import "math/rand/v2"

// Sample returns a function that tells, step by step, whether a grid
// checks its next input: every one without the race detector, one in n
// under it, chosen pseudo-randomly from a fixed seed (so that a run can be
// repeated and a failure found again). Every n-th input would keep only the
// values of the inner loops that n lands on, where a loop's length
// divides n.
func Sample(n int) func() bool {
	if n = Stride(n); n == 1 {
		return func() bool { return true }
	}
	r := rand.New(rand.NewPCG(18, uint64(n)))
	return func() bool { return r.IntN(n) == 0 }
}

// Stride is how sparsely Sample(n) samples: n (at least 1) under the race
// detector, 1 (every input) without it.
func Stride(n int) int {
	if !Enabled {
		return 1
	}
	return max(n, 1)
}

// Size is n without the race detector and n/div (at least 1) under it.
func Size(n, div int) int { return max(n/Stride(div), 1) }
