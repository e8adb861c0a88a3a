package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkGatewayLatency calls the same upstream tool straight and through
// harness serve (stdio both ways), for a small output and a 100 KB one, and
// reads the same small resource, and
// reports the p50 and p99 latency of each path and what the gateway adds at
// p50, and the CPU time the gateway process spent per call (user and
// system, from /proc: a figure that the machine's load sways less than
// latency). "gateway" is the default set-up (the SQLite ledger, event and
// decision logs on); "lean" keeps counters in memory and writes no logs, to
// show what the ledger and logs cost; "relay" is testdata/relay, a process
// that copies the bytes both ways and governs nothing: about what a
// process in the middle adds. The paths are called in turn, one call
// each, so that the load of this shared machine weighs on them alike. Run
// it with -benchtime 2000x (make bench-gateway) for at least 2,000 calls
// each. With HARNESS_BENCH_BASELINE set to another build of harness (of
// an earlier commit, say), a fifth path, "baseline", is that build set up
// as "gateway" is, with a ledger of its own: the two builds are compared
// in one run, in turn, under the same load (baseline-added-p50-µs beside
// added-p50-µs).
func BenchmarkGatewayLatency(b *testing.B) {
	t := &testing.T{}
	harnessBin, upstreamBin := buildBinaries(t)
	if t.Failed() {
		b.Fatal("building the binaries failed")
	}
	home, project, lean, baseHome := b.TempDir(), b.TempDir(), b.TempDir(), b.TempDir()
	baseline := os.Getenv("HARNESS_BENCH_BASELINE")
	writeFileB(b, filepath.Join(lean, ".lean-ctx", "harness.toml"), "[log]\nevents = \"off\"\ndecisions = \"off\"\n")
	for _, h := range []string{home, lean, baseHome} { // a user's role: a project's beyond the ceiling decides nothing
		writeFileB(b, filepath.Join(h, ".lean-ctx", "roles", "bench.toml"),
			"[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 1000000000000\nmax_cost_usd = 1000000.0\n")
	}
	for _, size := range []struct {
		name  string
		bytes int // of ctx_read; 0: a read of the resource test://static-text
	}{{"small", 20}, {"100KB", 100 << 10}, {"resource", 0}} {
		b.Run(size.name, func(b *testing.B) {
			paths := []struct {
				name string
				c    *client.Client
				lat  []time.Duration
			}{{name: "direct"}, {name: "relay"}, {name: "gateway"}, {name: "lean"}}
			if baseline != "" {
				paths = append(paths, struct {
					name string
					c    *client.Client
					lat  []time.Duration
				}{name: "baseline"})
			}
			for i := range paths {
				var c *client.Client
				var err error
				switch paths[i].name {
				case "direct":
					c, err = client.NewStdioMCPClient(upstreamBin, nil)
				case "relay":
					c, err = client.NewStdioMCPClient(binaries.relay, nil, upstreamBin)
				case "baseline": // as gateway, with the other build, its own ledger
					c, err = client.NewStdioMCPClient(baseline, []string{"HOME=" + baseHome},
						"serve", "--project", project, "--role", "bench", "--session", "bench-"+size.name, "--", upstreamBin)
				case "lean":
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
				paths[i].c, paths[i].lat = c, make([]time.Duration, 0, b.N)
			}
			callReq := mcp.CallToolRequest{}
			callReq.Params.Name, callReq.Params.Arguments = "ctx_read", map[string]any{"bytes": size.bytes}
			readReq := mcp.ReadResourceRequest{}
			readReq.Params.URI = "test://static-text"
			call := func(c *client.Client) time.Duration {
				start := time.Now()
				if size.bytes == 0 {
					res, err := c.ReadResource(context.Background(), readReq)
					d := time.Since(start)
					if err != nil || len(res.Contents) != 1 {
						b.Fatalf("%v %+v", err, res)
					}
					return d
				}
				res, err := c.CallTool(context.Background(), callReq)
				d := time.Since(start)
				if err != nil || res.IsError {
					b.Fatalf("%v %+v", err, res)
				}
				return d
			}
			for range 50 { // warm up every process
				for _, p := range paths {
					call(p.c)
				}
			}
			gwPid := childPid(b, harnessBin, "serve", "bench-"+size.name, "--ledger=") // not the lean one, nor the baseline
			cpu0 := procCPU(b, gwPid)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for i := range paths {
					paths[i].lat = append(paths[i].lat, call(paths[i].c))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((procCPU(b, gwPid)-cpu0).Microseconds())/float64(b.N), "gateway-cpu-µs/call")
			p50 := map[string]time.Duration{}
			for _, p := range paths {
				slices.Sort(p.lat)
				p50[p.name] = p.lat[len(p.lat)/2]
				b.ReportMetric(float64(p50[p.name].Microseconds()), p.name+"-p50-µs")
				b.ReportMetric(float64(p.lat[len(p.lat)*99/100].Microseconds()), p.name+"-p99-µs")
			}
			b.ReportMetric(float64((p50["gateway"] - p50["direct"]).Microseconds()), "added-p50-µs")
			b.ReportMetric(float64((p50["lean"] - p50["direct"]).Microseconds()), "lean-added-p50-µs")
			b.ReportMetric(float64((p50["relay"] - p50["direct"]).Microseconds()), "relay-added-p50-µs")
			if baseline != "" {
				b.ReportMetric(float64((p50["baseline"] - p50["direct"]).Microseconds()), "baseline-added-p50-µs")
			}
		})
	}
}

// childPid is the pid of this process's child whose arguments have every
// one of want and not the argument that starts with not.
func childPid(b *testing.B, want ...string) int {
	b.Helper()
	not := want[len(want)-1]
	want = want[:len(want)-1]
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		raw, _ := os.ReadFile(f)
		for _, p := range strings.Fields(string(raw)) {
			pid, _ := strconv.Atoi(p)
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			args := strings.Split(string(cmdline), "\x00")
			ok := !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, not) || a == strings.TrimSuffix(not, "=") })
			for _, w := range want {
				ok = ok && slices.Contains(args, w)
			}
			if ok {
				return pid
			}
		}
	}
	b.Fatalf("no child process with the arguments %q", want)
	return 0
}

// procCPU is the CPU time a process has spent, user and system.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// After the command's name, in parentheses: utime and stime are the
	// 12th and 13th fields, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func writeFileB(b *testing.B, path, content string) {
	t := &testing.T{}
	writeFile(t, path, content)
	if t.Failed() {
		b.Fatal("writing", path)
	}
}
