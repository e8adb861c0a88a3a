package main

import (
	"runtime/debug"
	"testing"
)

// TestLongRunningCollectsLessOften: the gateway and the hook daemon set
// the collector to 400% unless GOGC says otherwise.
func TestLongRunningCollectsLessOften(t *testing.T) {
	for _, tt := range []struct {
		name, gogc string
		want       int
	}{
		{"unset", "", 400},
		{"GOGC set", "50", 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := debug.SetGCPercent(100)
			defer debug.SetGCPercent(before)
			c := &cli{env: env{getenv: func(k string) string {
				if k == "GOGC" {
					return tt.gogc
				}
				return ""
			}}}
			c.longRunning()
			if got := debug.SetGCPercent(100); got != tt.want {
				t.Errorf("GC percent %d, want %d", got, tt.want)
			}
		})
	}
}
