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

// TestLeaveACore: the gateway runs its Go code on one core fewer than it
// may use and samples no allocations, in the real command only, and
// leaves each to GOMAXPROCS and HARNESS_DEBUG_ADDR when they are set.
func TestLeaveACore(t *testing.T) {
	for _, tt := range []struct {
		name       string
		process    bool
		env        map[string]string
		procs      int // before: 4
		sampleRate int // before: 512 KiB
	}{
		{"the command", true, nil, 3, 0},
		{"a test", false, nil, 4, 512 << 10},
		{"GOMAXPROCS set", true, map[string]string{"GOMAXPROCS": "4"}, 4, 0},
		{"HARNESS_DEBUG_ADDR set", true, map[string]string{"HARNESS_DEBUG_ADDR": "127.0.0.1:0"}, 3, 512 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			procs, rate := runtime.GOMAXPROCS(4), runtime.MemProfileRate
			runtime.MemProfileRate = 512 << 10
			defer func() { runtime.GOMAXPROCS(procs); runtime.MemProfileRate = rate }()
			c := &cli{env: env{process: tt.process, getenv: func(k string) string { return tt.env[k] }}}
			c.leaveACore()
			if got := runtime.GOMAXPROCS(0); got != tt.procs {
				t.Errorf("GOMAXPROCS %d, want %d", got, tt.procs)
			}
			if got := runtime.MemProfileRate; got != tt.sampleRate {
				t.Errorf("MemProfileRate %d, want %d", got, tt.sampleRate)
			}
		})
	}
}

func TestRelayProcs(t *testing.T) {
	for _, tt := range []struct{ n, want int }{{0, 1}, {1, 1}, {2, 1}, {3, 2}, {8, 7}, {64, 63}} {
		if got := relayProcs(tt.n); got != tt.want {
			t.Errorf("relayProcs(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}
