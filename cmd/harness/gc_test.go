package main

import (
	"runtime"
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

// TestSampleNoAllocations: the gateway samples no allocations for heap
// profiles, in the real command only, unless HARNESS_DEBUG_ADDR serves
// them.
func TestSampleNoAllocations(t *testing.T) {
	for _, tt := range []struct {
		name    string
		process bool
		debug   string
		want    int // before: 512 KiB
	}{
		{"the command", true, "", 0},
		{"a test", false, "", 512 << 10},
		{"HARNESS_DEBUG_ADDR set", true, "127.0.0.1:0", 512 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rate := runtime.MemProfileRate
			runtime.MemProfileRate = 512 << 10
			defer func() { runtime.MemProfileRate = rate }()
			c := &cli{env: env{process: tt.process, getenv: func(k string) string {
				if k == "HARNESS_DEBUG_ADDR" {
					return tt.debug
				}
				return ""
			}}}
			c.sampleNoAllocations()
			if got := runtime.MemProfileRate; got != tt.want {
				t.Errorf("MemProfileRate %d, want %d", got, tt.want)
			}
		})
	}
}
