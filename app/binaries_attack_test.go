package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestAttackBinaryLinkOnPath: the harness is installed as a symbolic link
// on the PATH (~/.local/bin/harness -> ~/src/harness/bin/harness, a
// Homebrew bin/harness -> ../Cellar/...), which is what a project's hook
// ("harness hook claude-code") and an MCP client ("harness serve") run.
// The process's own executable is the link's target, so only the target
// and the hook binary beside it were protected: ln -sf /bin/true
// ~/.local/bin/harness (or rm, then a program in its place) left every
// later call ungoverned. The name on the PATH and the hook binary beside
// it are protected as well.
func TestAttackBinaryLinkOnPath(t *testing.T) {
	t.Parallel()
	home, exe, bin := linkedHarness(t)
	p := params(home, home, map[string]string{"PATH": "/nonexistent:" + bin + ":/usr/bin"})
	p.Exe = exe
	h, err := Load(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	paths := h.protectedPaths()
	for _, want := range []string{exe, filepath.Join(bin, "harness"), filepath.Join(bin, "harness-hook")} {
		if !slices.Contains(paths, want) {
			t.Errorf("%s is not protected: %q", want, paths)
		}
	}
}

// A load looks for the harness on the process's own PATH too, when its
// environment names none or another (the hook daemon's requests carry the
// hook's): that can only add a path to protect.
func TestBinaryLinkOnTheProcessPath(t *testing.T) {
	home, exe, bin := linkedHarness(t)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	p := params(home, home, map[string]string{})
	p.Exe = exe
	h, err := Load(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if paths := h.protectedPaths(); !slices.Contains(paths, filepath.Join(bin, "harness")) {
		t.Errorf("the link on the process's PATH is not protected: %q", paths)
	}
}

// linkedHarness is a home, a harness binary exe and a directory bin
// holding a symbolic link named harness to it.
func linkedHarness(t *testing.T) (home, exe, bin string) {
	t.Helper()
	home, src, bin := t.TempDir(), t.TempDir(), t.TempDir()
	exe = filepath.Join(src, "harness")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(bin, "harness")); err != nil {
		t.Fatal(err)
	}
	return home, exe, bin
}
