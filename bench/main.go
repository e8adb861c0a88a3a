package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/cedar-policy/cedar-go"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/policy"
)

// call is one kind of call the comparison measures.
type call struct {
	name  string
	allow bool
	in    contract.Input
}

// calls are an allow, a refused tool, an exhausted budget and a shell call,
// each with arguments as an agent sends them.
var calls = []call{
	{"allow", true, contract.Input{Role: "reviewer", Tool: "ctx_read", Session: "s", Agent: "bench", Arguments: map[string]any{"path": "src/main.go"}}},
	{"allow-pattern", true, contract.Input{Role: "custom-07", Tool: "mcp__server7__query", Session: "s", Agent: "bench", Arguments: map[string]any{"path": "src/main.go"}}},
	{"deny-tool", false, contract.Input{Role: "reviewer", Tool: "ctx_edit", Session: "s", Agent: "bench", Arguments: map[string]any{"path": "src/main.go"}}},
	{"deny-budget", false, contract.Input{Role: "coder", Tool: "ctx_read", Budget: contract.Usage{Tokens: 200000}, Session: "s", Agent: "bench", Arguments: map[string]any{"path": "src/main.go"}}},
	{"allow-shell", true, contract.Input{Role: "ops", Tool: "ctx_shell", Budget: contract.Usage{Shell: 3}, Session: "s", Agent: "bench", Arguments: map[string]any{"command": "go test ./..."}}},
}

func main() {
	runs := flag.Int("runs", 3, "runs of each benchmark")
	flag.Parse()
	testing.Init()
	doc, err := document()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	e, err := harness(doc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ps, err := cedar.NewPolicySetFromBytes("harness.cedar", []byte(cedarPolicies(doc)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	perRole := map[string]*cedar.PolicySet{}
	for name := range doc.Roles {
		if perRole[name], err = cedar.NewPolicySetFromBytes(name+".cedar", []byte(cedarPolicies(doc, name))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	ctx := context.Background()
	for _, c := range calls {
		d, _ := e.Decide(ctx, c.in)
		got, _ := ps.IsAuthorized(cedar.EntityMap{}, cedarRequest(c.in))
		one, _ := perRole[c.in.Role].IsAuthorized(cedar.EntityMap{}, cedarRequest(c.in))
		if d.Allowed != c.allow || bool(got) != c.allow || bool(one) != c.allow {
			fmt.Fprintf(os.Stderr, "%s: the harness says %s, cedar-go %v (the role's policies: %v); want allowed=%v\n", c.name, d.Decision, got, one, c.allow)
			os.Exit(1)
		}
	}
	fmt.Printf("one decision, ns/op (allocs/op), %d runs each: the lowest and highest run; ratios pair each run with the same run\n", *runs)
	fmt.Printf("cedar-go: all %d roles' policies in one set; cedar-go/role: the set of the call's role, picked in Go\n\n", len(doc.Roles))
	fmt.Printf("%-14s %-20s %-18s %-20s %-18s %-14s %-14s %-14s %s\n", "call", "harness uncached", "harness cached", "cedar-go", "cedar-go/role",
		"uncached/cedar", "cached/cedar", "uncached/role", "cached/role")
	for _, c := range calls {
		var unc, cac, ced, one []testing.BenchmarkResult
		for range *runs {
			one = append(one, testing.Benchmark(func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					perRole[c.in.Role].IsAuthorized(cedar.EntityMap{}, cedarRequest(c.in))
				}
			}))
			e.SetCaching(false)
			unc = append(unc, testing.Benchmark(func(b *testing.B) { decide(b, e, c.in, false) }))
			e.SetCaching(true)
			cac = append(cac, testing.Benchmark(func(b *testing.B) { decide(b, e, c.in, true) }))
			ced = append(ced, testing.Benchmark(func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					ps.IsAuthorized(cedar.EntityMap{}, cedarRequest(c.in))
				}
			}))
		}
		fmt.Printf("%-14s %-20s %-18s %-20s %-18s %-14s %-14s %-14s %s\n", c.name, span(unc), span(cac), span(ced), span(one),
			ratio(unc, ced), ratio(cac, ced), ratio(unc, one), ratio(cac, one))
	}
}

// decide measures the harness's decision of in: cached, each call's usage
// differs (as a session's calls do) within the same budget band.
func decide(b *testing.B, e *policy.Engine, in contract.Input, vary bool) {
	b.ReportAllocs()
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		c := in
		if vary {
			c.Budget.CostMicros += int64(i % 50)
		}
		if _, err := e.Decide(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// nsPerOp are the runs' ns/op, sorted.
func nsPerOp(rs []testing.BenchmarkResult) []float64 {
	var out []float64
	for _, r := range rs {
		out = append(out, float64(r.T.Nanoseconds())/float64(r.N))
	}
	slices.Sort(out)
	return out
}

// span is the lowest and highest ns/op of the runs, and the allocations.
func span(rs []testing.BenchmarkResult) string {
	ns := nsPerOp(rs)
	return fmt.Sprintf("%.0f–%.0f (%d)", ns[0], ns[len(ns)-1], rs[0].AllocsPerOp())
}

// ratio is the range of a/b over the runs, pairing each run of a with the
// same run of b (measured one after the other).
func ratio(a, b []testing.BenchmarkResult) string {
	var rs []float64
	for i := range a {
		rs = append(rs, (float64(a[i].T.Nanoseconds())/float64(a[i].N))/(float64(b[i].T.Nanoseconds())/float64(b[i].N)))
	}
	slices.Sort(rs)
	return fmt.Sprintf("%.1f–%.1f×", rs[0], rs[len(rs)-1])
}
