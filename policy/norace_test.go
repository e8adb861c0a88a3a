//go:build !race

package policy

// raceDetector is true in a test binary built with the race detector.
const raceDetector = false

// stride is how sparsely the differential grids sample their inputs: all
// of them, without the race detector.
const stride = 1
