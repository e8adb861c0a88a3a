package plan

import (
	"context"
	"testing"

	"github.com/agentharness/harness/internal/race"
)

// A scan allocates nothing of its own: its state is the evaluation's,
// kept with it, so an evaluation that scans an object, a set and an array,
// one inside another, allocates as much as one that scans nothing.
func TestScansAllocateNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector drops what a sync.Pool keeps")
	}
	in, _ := document(`{"o": {"a": 1, "b": 2, "c": 3}, "s": {1, 2, 3}, "l": [3, 2, 1], "x": 3}`)
	for _, tt := range []struct{ name, src string }{
		{"no scan", "package t\nx if input.x == 3"},
		{"an object's", "package t\nx if { some v in input.o; v == input.x }"},
		{"a set's", "package t\nx if { some v in input.s; v == input.x }"},
		{"an array's", "package t\nx if { some v in input.l; v == input.x }"},
		{"nested", "package t\nx if { some k, v in input.o; some w in input.s; some u in input.l; v == w; w == u; u == input.x; k == \"c\" }"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, p, err := fixture(t, tt.src, "data.t.x")
			if err != nil {
				t.Fatal(err)
			}
			eval := func() {
				if v, err := p.Eval(context.Background(), in, Options{}); err != nil || v == nil {
					t.Fatalf("%v, %v", v, err)
				}
			}
			eval()
			if n := testing.AllocsPerRun(100, eval); n > 1 {
				t.Errorf("%v allocations an evaluation, want at most 1 (the input's term)", n)
			}
		})
	}
}
