package policy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// blowupChild names the policy a child process of TestAttackPathsBlowUp
// loads and decides with.
const blowupChild = "HARNESS_TEST_PATHS_BLOWUP"

// A project's policy calls graph.reachable_paths on a graph of 80 nodes in
// which every node leads to the two of the next level: 2^40 paths, which
// the built-in enumerates inside one call, where neither the deadline nor
// the heap's bound is looked at. The decision never ends, and the heap
// grows until the process dies (the system's OOM killer may take another
// process first; a hook killed by a signal lets Claude Code run the
// tool). Such a policy must be refused, or the call denied in time, in a
// process that lives on.
func TestAttackPathsBlowUp(t *testing.T) {
	src := `package harness.custom.paths

next(i) := [sprintf("n%d", [i + 1]), sprintf("m%d", [i + 1])]

g := object.union({sprintf("n%d", [i]): next(i) | some i in numbers.range(0, 40)}, {sprintf("m%d", [i]): next(i) | some i in numbers.range(0, 40)})

deny contains sprintf("%d paths", [count(graph.reachable_paths(g, {"n0"}))]) if input.tool == "ctx_read"
`
	if os.Getenv(blowupChild) != "" {
		// The child: at most 3 GiB of address space, so that the heap, if
		// it grows without end, fails here first.
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: 3 << 30, Max: 3 << 30}); err != nil {
			t.Fatal(err)
		}
		e, err := New(context.Background(), compiler.Compile(testSet(t), compiler.DefaultConfig()), compiler.Module{Name: "policies/project/paths.rego", Source: []byte(src)})
		if err != nil {
			fmt.Printf("refused=%q\n", strings.SplitN(err.Error(), "\n", 2)[0])
			return
		}
		e.SetBounds(Bounds{Timeout: 200 * time.Millisecond})
		d, _ := e.Decide(context.Background(), contract.Input{Role: "coder", Tool: "ctx_read", Arguments: map[string]any{"path": "README.md"}})
		fmt.Printf("decision=%s\n", d.Decision)
		return
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAttackPathsBlowUp$", "-test.count=1")
	cmd.Env = append(os.Environ(), blowupChild+"=1")
	out, err := cmd.CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n\n")
	switch {
	case err != nil:
		t.Errorf("the process deciding under the policy: %v after %v, %q", err, time.Since(start).Round(time.Second), first)
	case strings.Contains(first, "refused=") && strings.Contains(first, "graph.reachable_paths"):
	case strings.Contains(first, "decision=deny") && time.Since(start) < 10*time.Second:
	default:
		t.Errorf("the policy was neither refused nor its call denied in time (%v): %q", time.Since(start).Round(time.Second), first)
	}
}
