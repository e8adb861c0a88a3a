package main

import (
	"context"
	"fmt"
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
// bench-memory).
func BenchmarkGatewayMemory(b *testing.B) {
	const sessions, calls = 100, 100
	t := &testing.T{}
	harnessBin, upstreamBin := buildBinaries(t)
	if t.Failed() {
		b.Fatal("building the binaries failed")
	}
	home, project := b.TempDir(), b.TempDir()
	writeFileB(b, filepath.Join(home, ".lean-ctx", "harness.toml"), fmt.Sprintf("[gateway]\nmax_sessions = %d\n", sessions))
	writeFileB(b, filepath.Join(project, ".lean-ctx", "roles", "bench.toml"),
		"[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 1000000000000\nmax_cost_usd = 1000000.0\n")
	for b.Loop() {
		addr := freeAddrB(b)
		gw := startBenchProcess(b, harnessBin, cleanEnv(home), home, "serve", "--http", addr, "--project", project, "--role", "bench", "--", upstreamBin)
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

