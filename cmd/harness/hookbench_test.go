package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkHookCall measures one hook call as Claude Code makes it: a new
// process, the payload on stdin, until the answer. "daemon" is the usual
// case (a hook daemon is up); "local" answers in the process (the first
// call, or HARNESS_HOOK_DAEMON=off); "opa-eval" is the real opa CLI deciding
// the same call from the compiled bundle, for comparison. It reports p50
// and p99 (run with -benchtime 200x: make bench-hook).
func BenchmarkHookCall(b *testing.B) {
	t := &testing.T{}
	harnessBin, _ := buildBinaries(t)
	opa := opaBinary(t)
	if t.Failed() {
		b.Fatal("no binaries")
	}
	home := b.TempDir()
	pre := []byte(`{"session_id":"bench","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/tmp/main.go"},"tool_use_id":"toolu_01"}`)
	post := []byte(`{"session_id":"bench","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","permission_mode":"default","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{"file_path":"/tmp/main.go"},"tool_response":{"type":"text","file":{"filePath":"/tmp/main.go","content":"package main\n\nfunc main() {}\n"}},"tool_use_id":"toolu_01"}`)
	bundle := filepath.Join(b.TempDir(), "bundle")
	if out, err := exec.Command(harnessBin, "compile", "--out", bundle).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	input := filepath.Join(b.TempDir(), "input.json")
	os.WriteFile(input, []byte(`{"role":"coder","tool":"ctx_read","arguments":{"file_path":"/tmp/main.go"},"shell_policy":"track","budget":{"tokens":0,"shell":0,"cost_micros":0},"session":"bench","agent":"claude-code"}`), 0o644)

	run := func(b *testing.B, name string, args []string, env []string, stdin []byte) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			cmd := exec.Command(name, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Stdin = bytes.NewReader(stdin)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	env := []string{"HOME=" + home}

	// The daemon, as the first hook call would have started it.
	daemon := exec.Command(harnessBin, "hook", "daemon", "--idle", "10m")
	daemon.Env = append(os.Environ(), env...)
	if err := daemon.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { daemon.Process.Kill(); daemon.Wait() }()
	sock := filepath.Join(home, ".local", "state", "lean-ctx", "harness", "hook.sock")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the hook daemon never listened")
		}
	}
	for _, tt := range []struct {
		name    string
		env     []string
		payload []byte
	}{
		{"daemon/PreToolUse", env, pre},
		{"daemon/PostToolUse", env, post},
		{"local/PreToolUse", append(env, "HARNESS_HOOK_DAEMON=off"), pre},
		{"local/PostToolUse", append(env, "HARNESS_HOOK_DAEMON=off"), post},
	} {
		b.Run(tt.name, func(b *testing.B) { run(b, harnessBin, []string{"hook", "claude-code"}, tt.env, tt.payload) })
	}
	b.Run("opa-eval", func(b *testing.B) {
		run(b, opa, []string{"eval", "-b", bundle, "-i", input, "--format", "raw", "data.harness.decision"}, nil, nil)
	})

}
