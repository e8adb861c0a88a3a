package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkGatewayLatencyHTTP calls the same upstream tool over MCP's
// streamable HTTP, through harness serve --http (SQLite ledger, logs on)
// and through a plain proxy that governs nothing: supergateway, --stateful,
// in front of the same stdio upstream (SUPERGATEWAY_BIN, which make
// bench-gateway installs from npm; without it only the gateway is
// measured). A stdio client straight to the upstream is the floor. Result
// sizes from 20 bytes to 100 KB; the paths are called in turn, one call
// each, so that the machine's load weighs on them alike. It reports each
// path's p50 and p99 and the ratio of the gateway's p50 to the proxy's.
func BenchmarkGatewayLatencyHTTP(b *testing.B) {
	t := &testing.T{}
	harnessBin, upstreamBin := buildBinaries(t)
	if t.Failed() {
		b.Fatal("building the binaries failed")
	}
	home, project := b.TempDir(), b.TempDir()
	// A user's role: a project's beyond the agent's ceiling decides nothing.
	writeFileB(b, filepath.Join(home, ".lean-ctx", "roles", "bench.toml"),
		"[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 1000000000000\nmax_cost_usd = 1000000.0\n")
	gwAddr := freeAddrB(b)
	startBenchProcess(b, harnessBin, cleanEnv(home), home, "serve", "--http", gwAddr, "--project", project, "--role", "bench", "--", upstreamBin)
	urls := map[string]string{"gateway": "http://" + gwAddr + "/mcp"}
	names := []string{"direct", "gateway"}
	if sg := os.Getenv("SUPERGATEWAY_BIN"); sg != "" {
		addr := freeAddrB(b)
		_, port, _ := strings.Cut(addr, ":")
		startBenchProcess(b, "node", os.Environ(), home, sg, "--stdio", upstreamBin, "--outputTransport", "streamableHttp",
			"--stateful", "--port", port, "--logLevel", "none")
		urls["proxy"] = "http://" + addr + "/mcp"
		names = append(names, "proxy")
	} else {
		b.Log("SUPERGATEWAY_BIN is not set: no plain proxy to compare with (make bench-gateway installs it)")
	}
	for _, u := range urls {
		waitListeningB(b, u)
	}
	clients := map[string]*client.Client{}
	for _, name := range names {
		var c *client.Client
		var err error
		if name == "direct" {
			c, err = client.NewStdioMCPClient(upstreamBin, nil)
		} else {
			c, err = client.NewStreamableHttpClient(urls[name])
			if err == nil {
				err = c.Start(context.Background())
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		req := mcp.InitializeRequest{}
		req.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
		if _, err := c.Initialize(context.Background(), req); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		clients[name] = c
	}
	for _, size := range []int{20, 1 << 10, 10 << 10, 50 << 10, 100 << 10} {
		b.Run(sizeName(size), func(b *testing.B) {
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "ctx_read", map[string]any{"bytes": size}
			call := func(c *client.Client) time.Duration {
				start := time.Now()
				res, err := c.CallTool(context.Background(), req)
				d := time.Since(start)
				if err != nil || res.IsError {
					b.Fatalf("%v %+v", err, res)
				}
				return d
			}
			lat := map[string][]time.Duration{}
			for range 50 { // warm up every process
				for _, name := range names {
					call(clients[name])
				}
			}
			b.ResetTimer()
			for b.Loop() {
				for _, name := range names {
					lat[name] = append(lat[name], call(clients[name]))
				}
			}
			b.StopTimer()
			p50 := map[string]time.Duration{}
			for _, name := range names {
				l := lat[name]
				slices.Sort(l)
				p50[name] = l[len(l)/2]
				b.ReportMetric(float64(p50[name].Microseconds()), name+"-p50-µs")
				b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), name+"-p99-µs")
			}
			if p50["proxy"] > 0 {
				b.ReportMetric(float64(p50["gateway"])/float64(p50["proxy"]), "gateway/proxy-p50")
			}
		})
	}
}

// sizeName names a result size: 20B, 1KB, 100KB.
func sizeName(n int) string {
	if n >= 1<<10 {
		return strconv.Itoa(n>>10) + "KB"
	}
	return strconv.Itoa(n) + "B"
}

// startBenchProcess starts a server for a benchmark, until it ends.
func startBenchProcess(b *testing.B, bin string, env []string, dir string, args ...string) *exec.Cmd {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, dir
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return cmd
}

func freeAddrB(b *testing.B) string {
	t := &testing.T{}
	addr := freeAddr(t)
	if t.Failed() {
		b.Fatal("no free port")
	}
	return addr
}

// waitListeningB waits until an MCP endpoint answers a POST.
func waitListeningB(b *testing.B, url string) {
	b.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Post(url, "application/json", strings.NewReader("{}")); err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			b.Fatal(fmt.Sprintf("%s never listened", url))
		}
	}
}
