package main

import (
	"bytes"
	"io"
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

// BenchmarkHookStart measures one hook call with the daemon up, from the
// process's start to its answer, for the small hook binary
// (cmd/harness-hook) and harness hook claude-code, against the floor: a
// trivial Go binary that reads its stdin, dials a unix socket and prints
// the answer (testdata/hookfloor, answered at once by this process). Each
// iteration runs every path once, in turn, so that the machine's noise
// falls on all of them alike; it reports each path's p50 and p99, and the
// ratio of the small hook's p50 to the floor's (run with -benchtime 200x
// and -count: make bench-hook).
func BenchmarkHookStart(b *testing.B) {
	t := &testing.T{}
	harnessBin, _ := buildBinaries(t)
	small := smallHookBinary(t)
	if t.Failed() {
		b.Fatal("no binaries")
	}
	floorBin := filepath.Join(b.TempDir(), "hookfloor")
	if out, err := exec.Command("go", "build", "-o", floorBin, "../../testdata/hookfloor").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	dir, err := os.MkdirTemp("", "hb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The floor's socket: every connection gets an answer as soon as it
	// has sent its payload.
	floorSock := filepath.Join(dir, "floor.sock")
	l, err := net.Listen("unix", floorSock)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(io.Discard, c)
				io.WriteString(c, "{}\n")
			}()
		}
	}()

	home := filepath.Join(dir, "home")
	env := append(os.Environ(), "HOME="+home, "XDG_STATE_HOME=", "HARNESS_HOOK_DAEMON=")
	daemon := exec.Command(harnessBin, "hook", "daemon", "--idle", "10m")
	daemon.Env = env
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
	pre := []byte(`{"session_id":"bench","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/tmp/main.go"},"tool_use_id":"toolu_01"}`)
	post := []byte(`{"session_id":"bench","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","permission_mode":"default","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{"file_path":"/tmp/main.go"},"tool_response":{"type":"text","file":{"filePath":"/tmp/main.go","content":"package main\n\nfunc main() {}\n"}},"tool_use_id":"toolu_01"}`)
	paths := []struct {
		name  string
		argv  []string
		stdin []byte
	}{
		{"floor", []string{floorBin, floorSock}, pre},
		{"small-pre", []string{small, "claude-code"}, pre},
		{"small-post", []string{small, "claude-code"}, post},
		{"harness-pre", []string{harnessBin, "hook", "claude-code"}, pre},
		{"harness-post", []string{harnessBin, "hook", "claude-code"}, post},
	}
	once := func(i int) time.Duration {
		p := paths[i]
		cmd := exec.Command(p.argv[0], p.argv[1:]...)
		cmd.Env = env
		cmd.Stdin = bytes.NewReader(p.stdin)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err != nil {
			b.Fatalf("%s: %v: %s", p.name, err, out)
		}
		return took
	}
	for i := range paths { // the daemon's loads, the page cache
		once(i)
	}
	lat := make([][]time.Duration, len(paths))
	for b.Loop() {
		for i := range paths {
			lat[i] = append(lat[i], once(i))
		}
	}
	p50 := make([]float64, len(paths))
	for i, p := range paths {
		slices.Sort(lat[i])
		p50[i] = float64(lat[i][len(lat[i])/2].Microseconds()) / 1000
		b.ReportMetric(p50[i], p.name+"-p50-ms")
		b.ReportMetric(float64(lat[i][len(lat[i])*99/100].Microseconds())/1000, p.name+"-p99-ms")
	}
	b.ReportMetric(p50[1]/p50[0], "small/floor")
	b.ReportMetric(p50[3]/p50[0], "harness/floor")
}
