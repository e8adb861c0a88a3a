package policy

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentharness/harness/contract"
)

func TestNameTerms(t *testing.T) {
	var n nameTerms
	for _, tt := range []struct {
		name string
		s    string
		kept bool // a second ask gives the same term
	}{
		{"a role", "coder", true},
		{"empty", "", true},
		{"a tool with quotes", `mcp__x__"y"`, true},
		{"at the bound", strings.Repeat("a", maxNameTerm), true},
		{"past the bound", strings.Repeat("a", maxNameTerm+1), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := n.term(tt.s)
			second := n.term(tt.s)
			if got := string(second.Value.(ast.String)); got != tt.s {
				t.Fatalf("term of %q is %q", tt.s, got)
			}
			if (first == second) != tt.kept {
				t.Fatalf("kept: %v, want %v", first == second, tt.kept)
			}
		})
	}
}

// More strings than slots, from several goroutines: every term is its
// string's, whichever string a slot holds.
func TestNameTermsUnderChurn(t *testing.T) {
	var n nameTerms
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				s := fmt.Sprintf("tool-%d-%d", g%2, i%2000)
				if got := string(n.term(s).Value.(ast.String)); got != s {
					t.Errorf("term of %q is %q", s, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A decision's input holds the kept terms of its names.
func TestInputHoldsKeptNames(t *testing.T) {
	in := contract.Input{Role: "coder", Tool: "ctx_read", Session: "s-1", Agent: "a", Project: "p"}
	v1, err := inputValue(in, "track")
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := inputValue(in, "track")
	// Two of the names may share a slot (its seed is the process's own),
	// and then take it from each other: those are made again.
	slots := map[uint64]int{}
	for s := range map[string]bool{in.Role: true, in.Tool: true, in.Session: true, in.Agent: true, in.Project: true,
		"track": true, in.Upstream: true, in.UpstreamTool: true} {
		slots[names.slot(s)]++
	}
	for key, s := range map[string]string{"role": in.Role, "tool": in.Tool, "session": in.Session, "agent": in.Agent,
		"project": in.Project, "shell_policy": "track", "upstream": in.Upstream} {
		k := ast.StringTerm(key)
		if slots[names.slot(s)] > 1 {
			continue
		}
		if a, b := v1.(ast.Object).Get(k), v2.(ast.Object).Get(k); a == nil || a != b {
			t.Errorf("input.%s: %v and %v, want one term", key, a, b)
		}
	}
}
