package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// secret looks like a credential that an agent would like to read through
// the harness's error messages.
const secret = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

// runBinary runs the real harness binary in dir with a fresh home.
func runBinary(t *testing.T, home, dir string, args ...string) (out string, code int) {
	t.Helper()
	bin, _ := buildBinaries(t)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(b), code
}

// containedRepo is a repository with a project role and the destructive
// shell policy of the examples, in a fresh home.
func containedRepo(t *testing.T) (home, repo string) {
	t.Helper()
	home = t.TempDir()
	repo = filepath.Join(home, "src", "repo")
	policy, err := os.ReadFile("../../examples/policies/destructive_shell.rego")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(repo, ".lean-ctx", "roles", "team.toml"), "[role]\ninherits = \"coder\"\ndescription = \"the team's\"\n")
	writeFile(t, filepath.Join(repo, ".lean-ctx", "policies", "destructive_shell.rego"), string(policy))
	return home, repo
}

// Containment through the real binary: a nested .lean-ctx adds to the
// repository's rules and never hides them; a project may not redefine a
// user's role; a project's role file that links out of the project is
// refused without a word of what it points to.
func TestContainmentEndToEnd(t *testing.T) {
	t.Parallel()
	t.Run("a nested empty .lean-ctx hides nothing", func(t *testing.T) {
		t.Parallel()
		home, repo := containedRepo(t)
		pkg := filepath.Join(repo, "pkg")
		if err := os.MkdirAll(filepath.Join(pkg, ".lean-ctx"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{repo, pkg} {
			out, code := runBinary(t, home, dir, "check")
			if code != exitOK || !strings.Contains(out, "ok: 6 roles (5 built-in, 0 user, 1 project)") || !strings.Contains(out, "custom policies: 1") {
				t.Errorf("check in %s: exit %d\n%s", dir, code, out)
			}
			out, code = runBinary(t, home, dir, "roles", "list")
			if code != exitOK || !strings.Contains(out, "team") || !strings.Contains(out, "the team's") {
				t.Errorf("roles list in %s: exit %d\n%s", dir, code, out)
			}
			out, code = runBinary(t, home, dir, "decide", "--tool", "ctx_shell", "--args", `{"command": "git push --force origin main"}`)
			if code != exitDenied || !strings.Contains(out, "refusing a force push") {
				t.Errorf("a force push from %s: exit %d\n%s", dir, code, out)
			}
		}
	})
	t.Run("a project redefining a user's role", func(t *testing.T) {
		t.Parallel()
		home, repo := containedRepo(t)
		writeFile(t, filepath.Join(home, ".lean-ctx", "roles", "tiny.toml"), "[role]\ninherits = \"reviewer\"\n[limits]\nmax_shell_invocations = 1\n")
		writeFile(t, filepath.Join(repo, ".lean-ctx", "roles", "tiny.toml"), "[role]\ninherits = \"tiny\"\n[limits]\nmax_shell_invocations = 1000000\n")
		out, code := runBinary(t, home, repo, "check")
		want := filepath.Join(repo, ".lean-ctx", "roles", "tiny.toml") + `:1:1: role "tiny" is already defined by ` +
			filepath.Join(home, ".lean-ctx", "roles", "tiny.toml") + " (user): a project may only add roles"
		if code != exitCheck || !strings.Contains(out, want) {
			t.Errorf("exit %d\n%s\nwant %s", code, out, want)
		}
	})
	t.Run("a role file linking out of the project", func(t *testing.T) {
		t.Parallel()
		home, repo := containedRepo(t)
		outside := filepath.Join(home, ".aws", "credentials")
		writeFile(t, outside, "[default]\naws_secret_access_key = "+secret+"\n")
		link := filepath.Join(repo, ".lean-ctx", "roles", "leak.toml")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		out, code := runBinary(t, home, repo, "check")
		if code != exitCheck || !strings.Contains(out, link+": ") {
			t.Errorf("exit %d, want %d, naming the link:\n%s", code, exitCheck, out)
		}
		for _, part := range []string{secret[:8], secret[20:28], secret[40:48], "aws_secret", "credentials"} {
			if strings.Contains(out, part) {
				t.Errorf("the output shows %q of the file the link points to:\n%s", part, out)
			}
		}
	})
}
