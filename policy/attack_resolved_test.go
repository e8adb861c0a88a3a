package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// EditPaths gives the caller the strings the self-protection rules take
// for paths an edit changes (_path_arguments), so that it resolves every
// one of them: for an edit tool, the same set; for any other tool, none.
func TestEditPathsAgree(t *testing.T) {
	e := testEngine(t)
	pq := rawQuery(t, e, "data.harness._path_arguments")
	for _, args := range []any{
		nil,
		map[string]any{},
		map[string]any{"path": "a", "content": "b"},
		map[string]any{"file_path": "a", "notebook_path": "b", "new_string": "c"},
		map[string]any{"edits": []any{map[string]any{"path": "x"}, map[string]any{"Target": "y"}}},
		map[string]any{"paths": []any{"a", "b", []any{"c"}}, "SRC": "d", "url": "e", "n": 7},
		map[string]any{"files": []any{[]any{"nested"}}, "dest": map[string]any{"x": "not a path"}},
		map[string]any{"source": "same", "target": "same"},
	} {
		in, err := inputValue(contract.Input{Role: "coder", Tool: "ctx_edit", Arguments: args}, "track")
		if err != nil {
			t.Fatal(err)
		}
		rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(in))
		if err != nil || len(rs) != 1 {
			t.Fatalf("%v: %v %v", args, rs, err)
		}
		var want []string
		for _, v := range rs[0].Expressions[0].Value.([]any) {
			want = append(want, v.(string))
		}
		got := e.EditPaths("ctx_edit", "", args)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%v: EditPaths %q, the policy's %q", args, got, want)
		}
		if got := e.EditPaths("ctx_read", "", args); got != nil {
			t.Errorf("%v: EditPaths of ctx_read %q", args, got)
		}
		if want != nil && e.EditPaths("fs__write", "Edit", args) == nil {
			t.Errorf("%v: none for an upstream's Edit", args)
		}
	}
}

// TestAttackResolvedIntoHarnessFiles: a path argument that names nothing
// of the harness's as written, but resolves into the harness's files (a
// symbolic link in the project), or could not be resolved, is refused;
// one that resolves elsewhere is not. The decision cache keys on the
// resolution: the same arguments resolved elsewhere are decided anew.
func TestAttackResolvedIntoHarnessFiles(t *testing.T) {
	doc := compiler.Compile(testSet(t), compiler.Config{ShellTools: contract.DefaultShellTools, ExemptTools: contract.DefaultExemptTools,
		EditTools: contract.DefaultEditTools, Protect: compiler.Protect{Home: "/home/dev", Project: "/work/app",
			Paths: []string{"/home/dev/.lean-ctx", "/home/dev/.local/state/lean-ctx/harness"}}})
	e, err := New(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		tool     string
		args     map[string]any
		resolved map[string][]string
		reason   string // a part of the refusal's message; "" for allowed
	}{
		{"into the roles", "ctx_edit", map[string]any{"path": "notes/roles/coder.toml"},
			map[string][]string{"notes/roles/coder.toml": {"/home/dev/.lean-ctx/roles/coder.toml"}}, `which is "/home/dev/.lean-ctx/roles/coder.toml" as the file system resolves it`},
		{"one of two resolutions", "Write", map[string]any{"file_path": "/work/app/cfg/ledger.db"},
			map[string][]string{"/work/app/cfg/ledger.db": {"/home/dev/.local/state/lean-ctx/harness/ledger.db", "/work/app/ledger.db"}}, "ledger.db"},
		{"the project's .lean-ctx", "ctx_edit", map[string]any{"path": "docs/policies/x.rego"},
			map[string][]string{"docs/policies/x.rego": {"/work/app/.lean-ctx/policies/x.rego"}}, "as the file system resolves it"},
		{"unresolved", "ctx_edit", map[string]any{"path": "deep/x"},
			map[string][]string{"deep/x": nil}, "could not resolve it"},
		{"an upstream's edit tool", "fs__edit", map[string]any{"path": "notes/harness.toml"},
			map[string][]string{"notes/harness.toml": {"/home/dev/.lean-ctx/harness.toml"}}, "as the file system resolves it"},
		{"elsewhere", "ctx_edit", map[string]any{"path": "lib/x.go"},
			map[string][]string{"lib/x.go": {"/work/app/src/x.go"}}, ""},
		{"not an edit tool", "ctx_read", map[string]any{"path": "notes/harness.toml"},
			map[string][]string{"notes/harness.toml": {"/home/dev/.lean-ctx/harness.toml"}}, ""},
		{"not a path argument", "ctx_edit", map[string]any{"path": "a.go", "content": "notes/harness.toml"},
			map[string][]string{"notes/harness.toml": {"/home/dev/.lean-ctx/harness.toml"}}, ""},
		{"the same path elsewhere, after the cache kept its refusal", "ctx_edit", map[string]any{"path": "notes/roles/coder.toml"},
			map[string][]string{"notes/roles/coder.toml": {"/work/app/notes/roles/coder.toml"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := contract.Input{Role: "coder", Tool: tt.tool, Arguments: tt.args, Resolved: tt.resolved, Agent: "a", Session: "s"}
			if up, _, ok := strings.Cut(tt.tool, "__"); ok {
				in.Upstream, in.UpstreamTool = up, "ctx_edit"
			}
			for _, cached := range []bool{true, false} {
				e.SetCaching(cached)
				d, err := e.Decide(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				if tt.reason == "" {
					if d.Decision != contract.Allow {
						t.Errorf("cached %v: %+v", cached, d)
					}
					continue
				}
				if d.Decision != contract.Deny || len(d.Reasons) != 1 || d.Reasons[0].Code != "harness_files" || !strings.Contains(d.Reasons[0].Message, tt.reason) {
					t.Errorf("cached %v: %+v", cached, d)
				}
			}
		})
	}
}

// What edits keeps of a tool's name is what the expression says of it,
// for the names it keeps and for those past maxEdited alike, asked once
// or again: an agent that sends many names makes no tool look like
// another.
func TestEditsKeepsTheExpressionsAnswer(t *testing.T) {
	e := testEngine(t)
	l := e.cur.Load()
	var names []string
	for i := range maxEdited + 50 {
		names = append(names, fmt.Sprintf("tool_%d", i))
	}
	names = append(names, "ctx_edit", "Write", "ctx_read", "EDIT_file", "mcp__fs__write_file")
	for round := range 2 {
		for _, name := range names {
			if got, want := l.edits(name), l.edit.MatchString(strings.ToLower(name)); got != want {
				t.Fatalf("round %d: edits(%q) = %v, the expression says %v", round, name, got, want)
			}
		}
	}
	if !l.edits("ctx_edit") || l.edits("ctx_read") {
		t.Error("ctx_edit must edit, ctx_read not")
	}
}
