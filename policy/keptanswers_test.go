package policy

import (
	"strconv"
	"testing"
)

// keptAnswers gives f's answer for every key, keeps those of the first
// max keys, and works out the rest each time.
func TestKeptAnswers(t *testing.T) {
	k := keptAnswers[int]{max: 3}
	calls := map[string]int{}
	f := func(s string) int { calls[s]++; return len(s) }
	for round := range 2 {
		for i := range 5 {
			key := strconv.Itoa(i * 1000)
			if got := k.get(key, f); got != len(key) {
				t.Fatalf("round %d: get(%q) = %d, want %d", round, key, got, len(key))
			}
		}
	}
	for i := range 5 {
		key := strconv.Itoa(i * 1000)
		if want := map[bool]int{true: 1, false: 2}[i < 3]; calls[key] != want {
			t.Errorf("%q worked out %d times, want %d", key, calls[key], want)
		}
	}
}
