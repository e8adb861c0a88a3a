package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// The bound of a match's steps is a custom policy's: the harness's own
// rules match their suspect expression against every string of a call's
// arguments, and an edit of 9 MB is allowed as before; a custom policy's
// short pattern matches such a text too.
func TestRegexBoundLeavesOrdinaryCalls(t *testing.T) {
	t.Parallel()
	doc := compiler.Compile(testSet(t), compiler.Config{
		Protect: compiler.Protect{Home: "/home/dev", Paths: []string{"/home/dev/.lean-ctx", "/home/dev/ledgers/main.db", "/srv/state"}},
	})
	src := "package harness.custom.secrets\n\ndeny contains \"a key\" if regex.match(`AKIA[0-9A-Z]{16}`, input.arguments.content)\n"
	e, err := New(context.Background(), doc, compiler.Module{Name: "policies/project/secrets.rego", Source: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	e.SetCaching(false)
	content := strings.Repeat("x/y.lean ", 1<<20)
	for _, tt := range []struct {
		content string
		want    string
	}{
		{content, contract.Allow},
		{content + "AKIAABCDEFGHIJKLMNOP", contract.Deny},
	} {
		in := contract.Input{Role: "coder", Tool: "ctx_edit", Arguments: map[string]any{"path": "a.txt", "content": tt.content}}
		for i := range 2 { // topdown, then the plan
			if i == 1 {
				if p, err := e.cur.Load().waitPlan(Query); err != nil || p == nil {
					t.Fatalf("no plan: %v", err)
				}
			}
			if d, _ := e.Decide(context.Background(), in); d.Decision != tt.want || (tt.want == contract.Deny && !strings.Contains(strings.Join(reasonTexts(d), " "), "a key")) {
				t.Errorf("an edit of %d bytes (%d): %s %v, want %s", len(tt.content), i, d.Decision, d.Reasons, tt.want)
			}
		}
	}
}

func reasonTexts(d contract.Decision) []string {
	var out []string
	for _, r := range d.Reasons {
		out = append(out, r.Message)
	}
	return out
}
