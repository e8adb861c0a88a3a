package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/custom"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// A long-running engine follows edits of roles and policies; an edit that
// does not compile keeps the last good policy, reports file:line, and the
// next edit is tried again.
func TestRebuildOnEdits(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rolesDir := filepath.Join(root, ".lean-ctx", "roles")
	policiesDir := filepath.Join(root, ".lean-ctx", "policies")
	load := func() (*compiler.Document, []compiler.Module, error) {
		set, err := roles.Load(roles.Dirs{Project: []string{rolesDir}})
		if err != nil {
			return nil, nil, err
		}
		mods, err := custom.Load([]custom.Dir{{Path: policiesDir, Bundle: "policies/project"}})
		return compiler.Compile(set, compiler.DefaultConfig()), mods, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	doc, mods, err := load()
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(ctx, doc, mods...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var errs []string
	reloads := 0
	go Run(ctx, Options{
		Paths:    []string{rolesDir, policiesDir},
		Debounce: 20 * time.Millisecond,
		Rebuild: func() error {
			doc, mods, err := load()
			if err != nil {
				return err
			}
			return e.Reload(ctx, doc, mods...)
		},
		OnError:  func(err error) { mu.Lock(); errs = append(errs, err.Error()); mu.Unlock() },
		OnReload: func() { mu.Lock(); reloads++; mu.Unlock() },
	})
	time.Sleep(50 * time.Millisecond) // the watcher is up
	decide := func(role, cmd string) string {
		d, _ := e.Decide(ctx, contract.Input{Role: role, Tool: "ctx_shell", Arguments: map[string]any{"command": cmd}})
		return d.Decision
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if ok() {
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s never happened (errors: %v)", what, errs)
	}
	write := func(path, src string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A policy appears (its directory did not exist when watching began).
	policyFile := filepath.Join(policiesDir, "no_ls.rego")
	write(policyFile, "package harness.custom.no_ls\n\ndeny contains \"no ls\" if input.arguments.command == \"ls\"\n")
	eventually("the new policy", func() bool { return decide("coder", "ls") == contract.Deny })

	// A broken edit keeps the last good policy and says where it broke.
	write(policyFile, "package harness.custom.no_ls\n\ndeny contains \"no ls\" if input.arguments.command ==\n")
	eventually("the error report", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(errs) > 0 && strings.Contains(errs[len(errs)-1], policyFile+":")
	})
	if decide("coder", "ls") != contract.Deny {
		t.Error("a broken edit replaced the last good policy")
	}

	// The next edit is tried again.
	write(policyFile, "package harness.custom.no_ls\n\ndeny contains \"no pwd\" if input.arguments.command == \"pwd\"\n")
	eventually("the fixed policy", func() bool { return decide("coder", "pwd") == contract.Deny && decide("coder", "ls") == contract.Allow })

	// A new role file is picked up too.
	write(filepath.Join(rolesDir, "no-shell.toml"), "[role]\nshell_policy = \"deny\"\n")
	eventually("the new role", func() bool { return decide("no-shell", "make") == contract.Deny })
}
