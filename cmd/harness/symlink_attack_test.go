package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackEditThroughSymbolicLink: the agent's repository holds
// symbolic links to the harness's own files (committed in git, or made by
// an earlier call), and a role with edit tools and no shell writes through
// them: notes/harness.toml is the user's ~/.lean-ctx/harness.toml,
// notes/roles/scribe.toml the role it runs under. The path as written
// names nothing of the harness's; the tool follows the link. Each such
// edit is refused (harness_files), through the hook (Claude Code's Edit,
// Write, MultiEdit, NotebookEdit) and through the gateway (ctx_edit),
// while links that stay out of the harness's files are the agent's.
func TestAttackEditThroughSymbolicLink(t *testing.T) {
	t.Parallel()
	home, project, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	// A role that edits files and has no shell, the default one.
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[enforcement]\ndefault_role = \"scribe\"\n")
	writeFile(t, filepath.Join(home, ".lean-ctx", "roles", "scribe.toml"),
		"[role]\nshell_policy = \"deny\"\n[tools]\nallowed = [\"ctx_read\", \"ctx_edit\", \"ctx_session\"]\n")
	state := filepath.Join(home, ".local", "state", "lean-ctx", "harness")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(project, "src", "main.go"), "package main\n")
	relState, err := filepath.Rel(project, state)
	if err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"notes":     filepath.Join(home, ".lean-ctx"),                       // the user's files
		"cfg":       relState,                                               // the state directory, by a relative link
		"hop":       "notes",                                                // a link to a link
		"newrole":   filepath.Join(home, ".lean-ctx", "roles", "boss.toml"), // dangling: a role not written yet
		"lib":       "src",                                                  // the project's own
		"scratch":   filepath.Join(elsewhere, "gone", "dir"),                // dangling, outside
		"src/above": "..",                                                   // up to the project
	} {
		if err := os.Symlink(target, filepath.Join(project, link)); err != nil {
			t.Fatal(err)
		}
	}
	in := func(rel string) string { return filepath.Join(project, rel) }
	refused := []struct {
		name, tool, input string
	}{
		{"Write harness.toml", "Write", fmt.Sprintf(`{"file_path": %q, "content": "[protect]\nenabled = false\n"}`, in("notes/harness.toml"))},
		{"Edit the role", "Edit", fmt.Sprintf(`{"file_path": %q, "old_string": "deny", "new_string": "track"}`, in("notes/roles/scribe.toml"))},
		{"Write the ledger", "Write", fmt.Sprintf(`{"file_path": %q, "content": ""}`, in("cfg/ledger.db"))},
		{"MultiEdit through a link to a link", "MultiEdit", fmt.Sprintf(`{"file_path": %q, "edits": []}`, in("hop/roles/scribe.toml"))},
		{"Write a relative path", "Write", `{"file_path": "notes/roles/boss.toml", "content": "[tools]\nallowed = [\"*\"]\n"}`},
		{"Write a dangling link into the roles", "Write", fmt.Sprintf(`{"file_path": %q, "content": ""}`, in("newrole"))},
		{"Write through .. after a link", "Write", fmt.Sprintf(`{"file_path": %q, "content": ""}`, in("src/above/notes/harness.toml"))},
		{"NotebookEdit", "NotebookEdit", fmt.Sprintf(`{"notebook_path": %q, "new_source": ""}`, in("notes/policies/x.ipynb"))},
	}
	allowed := []struct {
		name, tool, input string
	}{
		{"a link to the project's own directory", "Write", fmt.Sprintf(`{"file_path": %q, "content": ""}`, in("lib/util.go"))},
		{"a relative path through the project's link", "Edit", `{"file_path": "lib/main.go", "old_string": "a", "new_string": "b"}`},
		{"a dangling link outside", "Write", fmt.Sprintf(`{"file_path": %q, "content": ""}`, in("scratch/x.txt"))},
		{"a plain file", "Write", fmt.Sprintf(`{"file_path": %q, "content": ""}`, in("src/main.go"))},
	}
	t.Run("hook", func(t *testing.T) {
		for i, tt := range refused {
			out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, preToolUse(fmt.Sprintf("R%d", i), project, tt.tool, tt.input))
			if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "harness_files") {
				t.Errorf("%s: %s %s: exit %d\n%s%s", tt.name, tt.tool, tt.input, code, out, errOut)
			}
		}
		for i, tt := range allowed {
			out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, preToolUse(fmt.Sprintf("A%d", i), project, tt.tool, tt.input))
			if code != 0 || strings.Contains(out, "deny") {
				t.Errorf("%s refused: %s %s: exit %d\n%s%s", tt.name, tt.tool, tt.input, code, out, errOut)
			}
		}
	})
	t.Run("gateway", func(t *testing.T) {
		c := stdioClient(t, home, project)
		for _, tt := range []struct {
			path string
			deny bool
		}{
			{in("notes/harness.toml"), true},
			{in("notes/roles/scribe.toml"), true},
			{in("cfg/ledger.db"), true},
			{in("hop/harness.toml"), true},
			{"notes/roles/boss.toml", true}, // relative: from the project
			{"file://" + in("notes/harness.toml"), true},
			{in("newrole"), true},
			{in("lib/util.go"), false},
			{"lib/util.go", false},
			{in("scratch/x.txt"), false},
		} {
			res := call(t, c, "ctx_edit", map[string]any{"path": tt.path})
			switch {
			case tt.deny && (!res.IsError || !strings.Contains(text(res), "harness_files")):
				t.Errorf("ctx_edit %s: not refused: %s", tt.path, text(res))
			case !tt.deny && res.IsError:
				t.Errorf("ctx_edit %s refused: %s", tt.path, text(res))
			}
		}
	})
}
