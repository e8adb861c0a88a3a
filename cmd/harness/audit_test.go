package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A project's harness.toml may not mask: a mask erases what the agent did
// from the logs, and the agent edits its repository. Every command refuses
// to load it, with the file, line, column and key.
func TestProjectMayNotMask(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	file := filepath.Join(project, ".lean-ctx", "harness.toml")
	writeFile(t, file, "[tools]\nshell = [\"bash\"]\n\n[log]\nmask = [\"/arguments\", \"/tool\", \"/agent\", \"/session\", \"/role\"]\n")
	want := file + ":5:1: log.mask may only be set in the user's harness.toml"
	out, _, code := harness(t, nil, "check", "--project", project)
	if code != exitCheck || !strings.Contains(out, want) {
		t.Errorf("check: exit %d, want %d and %q:\n%s", code, exitCheck, want, out)
	}
	home := t.TempDir()
	_, errOut, code := harnessIn(t, home, nil, "decide", "--project", project, "--session", "s", "--record", "--tool", "ctx_edit", "--args", `{"path": "a.go"}`)
	if code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("decide: exit %d, want %d and %q:\n%s", code, exitError, want, errOut)
	}
}
