//go:build race

package policy

// raceDetector is true in a test binary built with the race detector,
// where the long grids run a sample (make test runs their whole grids
// without it as well).
const raceDetector = true

// stride is how sparsely the differential grids sample their inputs: under
// the race detector, which checks the engine's concurrency and not its
// logic, every fourth (and the grids take minutes); make test runs them
// whole without it too.
const stride = 4
