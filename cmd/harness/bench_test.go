package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkGatewayLatency calls the same upstream tool straight and through
// harness serve (stdio both ways, the default SQLite ledger, event and
// decision logs on), for a small output and a 100 KB one, and reports the
// p50 and p99 of the calls' latency. Run it with -benchtime 2000x (make
// bench-gateway) for at least 2,000 calls each.
func BenchmarkGatewayLatency(b *testing.B) {
	t := &testing.T{}
	harnessBin, upstreamBin := buildBinaries(t)
	if t.Failed() {
		b.Fatal("building the binaries failed")
	}
	home, project, lean := b.TempDir(), b.TempDir(), b.TempDir()
	writeFileB(b, filepath.Join(lean, ".lean-ctx", "harness.toml"), "[log]\nevents = \"off\"\ndecisions = \"off\"\n")
	writeFileB(b, filepath.Join(project, ".lean-ctx", "roles", "bench.toml"),
		"[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 1000000000000\nmax_cost_usd = 1000000.0\n")
	// "gateway" is the default set-up; "gateway-lean" keeps counters in
	// memory and writes no logs, to show what the ledger and logs cost.
	for _, via := range []string{"direct", "gateway", "gateway-lean"} {
		for _, size := range []struct {
			name  string
			bytes int
		}{{"small", 20}, {"100KB", 100 << 10}} {
			b.Run(via+"/"+size.name, func(b *testing.B) {
				var c *client.Client
				var err error
				switch via {
				case "direct":
					c, err = client.NewStdioMCPClient(upstreamBin, nil)
				case "gateway-lean":
					c, err = client.NewStdioMCPClient(harnessBin, []string{"HOME=" + lean},
						"serve", "--project", project, "--role", "bench", "--ledger", "memory:", "--session", "bench-"+size.name, "--", upstreamBin)
				default:
					c, err = client.NewStdioMCPClient(harnessBin, []string{"HOME=" + home},
						"serve", "--project", project, "--role", "bench", "--session", "bench-"+size.name, "--", upstreamBin)
				}
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				req := mcp.InitializeRequest{}
				req.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
				if _, err := c.Initialize(context.Background(), req); err != nil {
					b.Fatal(err)
				}
				callReq := mcp.CallToolRequest{}
				callReq.Params.Name, callReq.Params.Arguments = "ctx_read", map[string]any{"bytes": size.bytes}
				for range 50 { // warm up both processes
					c.CallTool(context.Background(), callReq)
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for b.Loop() {
					start := time.Now()
					res, err := c.CallTool(context.Background(), callReq)
					lat = append(lat, time.Since(start))
					if err != nil || res.IsError {
						b.Fatalf("%v %+v", err, res)
					}
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}

func writeFileB(b *testing.B, path, content string) {
	t := &testing.T{}
	writeFile(t, path, content)
	if t.Failed() {
		b.Fatal("writing", path)
	}
}
