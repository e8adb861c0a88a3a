// Package layers holds no code: its test pins the import graph of the
// harness, so that a dependency that points the wrong way (an event reader
// that links the policy engine, a configuration reader that links Redis)
// fails a test rather than creep in.
package layers
