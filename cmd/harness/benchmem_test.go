package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkGatewayMemory is the resident memory of harness serve --http
// (SQLite ledger, logs on) after 10,000 calls across 100 sessions, their
// clients calling at once, 100 calls each, of results from 20 bytes to
// 10 KB; the sessions stay open. It reports the gateway's RSS then, its
// peak (VmHWM) and the RSS before the first session, from
// /proc/PID/status; the upstreams, one process per session, are not the
// gateway's and are not counted. Run it once (-benchtime 1x; make
// bench-memory). It reports the Go heap's share too: in use, and held
// from the system (the rest of the RSS is stacks, the runtime's own and
// the binary). With HARNESS_BENCH_HEAP set, the gateway's heap profile
// then is written to the file it names (go tool pprof reads it).
func BenchmarkGatewayMemory(b *testing.B) {
	const sessions, calls = 100, 100
	t := &testing.T{}
	harnessBin, upstreamBin := buildBinaries(t)
	if t.Failed() {
		b.Fatal("building the binaries failed")
	}
	home, project := b.TempDir(), b.TempDir()
	writeFileB(b, filepath.Join(home, ".lean-ctx", "harness.toml"), fmt.Sprintf("[gateway]\nmax_sessions = %d\n", sessions))
	// A user's role: a project's beyond the agent's ceiling decides nothing.
	writeFileB(b, filepath.Join(home, ".lean-ctx", "roles", "bench.toml"),
		"[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 1000000000000\nmax_cost_usd = 1000000.0\n")
	for b.Loop() {
		addr, debug := freeAddrB(b), freeAddrB(b)
		gw := startBenchProcess(b, harnessBin, append(cleanEnv(home), "HARNESS_DEBUG_ADDR="+debug), home, "serve", "--http", addr, "--project", project, "--role", "bench", "--", upstreamBin)
		url := "http://" + addr + "/mcp"
		waitListeningB(b, url)
		idle := procStatus(b, gw.Process.Pid)
		var wg sync.WaitGroup
		errs := make(chan error, sessions)
		for i := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- memoryClient(url, i, calls)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		st := procStatus(b, gw.Process.Pid)
		if path := os.Getenv("HARNESS_BENCH_HEAP"); path != "" {
			os.WriteFile(path, get(b, "http://"+debug+"/debug/pprof/heap"), 0o644)
		}
		// The runtime's own figures, at the end of the heap profile's
		// text: what the Go heap holds, and what of it is in use.
		mem := map[string]float64{}
		for _, line := range strings.Split(string(get(b, "http://"+debug+"/debug/pprof/heap?debug=1")), "\n") {
			if k, v, ok := strings.Cut(strings.TrimPrefix(line, "# "), " = "); ok {
				n, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
				mem[k] = n
			}
		}
		b.ReportMetric(mem["HeapInuse"]/(1<<20), "heap-in-use-MiB")
		b.ReportMetric((mem["HeapSys"]-mem["HeapReleased"])/(1<<20), "heap-held-MiB")
		b.ReportMetric(float64(idle["VmRSS"])/1024, "idle-RSS-MiB")
		b.ReportMetric(float64(st["VmRSS"])/1024, "RSS-MiB")
		b.ReportMetric(float64(st["VmHWM"])/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(st["Threads"]), "threads")
	}
}

// memoryClient opens a session and makes calls calls in it; the session
// stays open until the benchmark ends.
func memoryClient(url string, i, calls int) error {
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		return err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		return fmt.Errorf("session %d: %w", i, err)
	}
	for n := range calls {
		call := mcp.CallToolRequest{}
		call.Params.Name, call.Params.Arguments = "ctx_read", map[string]any{"bytes": []int{20, 1 << 10, 10 << 10}[n%3]}
		if res, err := c.CallTool(ctx, call); err != nil || res.IsError {
			return fmt.Errorf("session %d, call %d: %v %+v", i, n, err, res)
		}
	}
	return nil
}

// get is the body at url.
func get(b *testing.B, url string) []byte {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// procStatus is a process's /proc/PID/status, the figures in kB.
func procStatus(b *testing.B, pid int) map[string]int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if f := strings.Fields(v); len(f) > 0 {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}
