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

// fixture is a policy engine on the roles and policies of one project's
// .lean-ctx, kept current by Run as the gateway keeps its own.
type fixture struct {
	t                    *testing.T
	lean, roles, polices string
	engine               *policy.Engine
	kicks                chan struct{} // a kick after each rebuild, good or failed
	mu                   sync.Mutex
	errs                 []string
	config               string // harness.toml as the last rebuild read it
}

// watchProject starts watching root's .lean-ctx (whatever of it exists) and
// returns once the watches are in place.
func watchProject(t *testing.T, root string) *fixture {
	t.Helper()
	lean := filepath.Join(root, ".lean-ctx")
	f := &fixture{t: t, lean: lean, roles: filepath.Join(lean, "roles"), polices: filepath.Join(lean, "policies"),
		kicks: make(chan struct{}, 1)}
	load := func() (*compiler.Document, []compiler.Module, error) {
		set, err := roles.Load(roles.Dirs{Project: []string{f.roles}})
		if err != nil {
			return nil, nil, err
		}
		mods, err := custom.Load([]custom.Dir{{Path: f.polices, Bundle: "policies/project"}})
		return compiler.Compile(set, compiler.DefaultConfig()), mods, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	doc, mods, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if f.engine, err = policy.New(ctx, doc, mods...); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Paths:    []string{f.roles, f.polices, filepath.Join(lean, "harness.toml")},
			Debounce: 20 * time.Millisecond,
			Rebuild: func() error {
				doc, mods, err := load()
				if err != nil {
					return err
				}
				src, _ := os.ReadFile(filepath.Join(lean, "harness.toml"))
				f.mu.Lock()
				f.config = string(src)
				f.mu.Unlock()
				return f.engine.Reload(ctx, doc, mods...)
			},
			OnError: func(err error) {
				f.mu.Lock()
				f.errs = append(f.errs, err.Error())
				f.mu.Unlock()
				f.kick()
			},
			OnReload: f.kick,
			Ready:    func() { close(ready) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("watching ended before it began: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the watches were never in place")
	}
	return f
}

func (f *fixture) kick() {
	select {
	case f.kicks <- struct{}{}:
	default: // a kick is already waiting
	}
}

// configIs says whether the last rebuild read src from harness.toml.
func (f *fixture) configIs(src string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.config == src
}

// decide is the decision on a shell call of command in role.
func (f *fixture) decide(role, command string) string {
	d, _ := f.engine.Decide(context.Background(), contract.Input{Role: role, Tool: "ctx_shell", Arguments: map[string]any{"command": command}})
	return d.Decision
}

// await waits, rebuild by rebuild, until ok holds; 10 s without it fails the
// test.
func (f *fixture) await(what string, ok func() bool) {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for !ok() {
		select {
		case <-f.kicks:
		case <-deadline:
			f.mu.Lock()
			defer f.mu.Unlock()
			f.t.Fatalf("%s: never seen (rebuild errors: %v)", what, f.errs)
		}
	}
}

// write writes a file, making its directories.
func write(t *testing.T, path, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeOver writes a file as editors save: a temporary file beside it,
// renamed over it.
func writeOver(t *testing.T, path, src string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	write(t, tmp, src)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func removeAll(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}

// role is a role file of shell policy p; policyOn denies the shell command
// cmd.
func role(p string) string { return "[role]\nshell_policy = \"" + p + "\"\n" }
func policyOn(cmd string) string {
	return "package harness.custom.p\n\ndeny contains \"no " + cmd + "\" if input.arguments.command == \"" + cmd + "\"\n"
}

// A long-running engine follows edits of roles and policies; an edit that
// does not compile keeps the last good policy, reports file:line, and the
// next edit is tried again.
func TestRebuildOnEdits(t *testing.T) {
	t.Parallel()
	f := watchProject(t, t.TempDir())

	// A policy appears (its directory did not exist when watching began).
	policyFile := filepath.Join(f.polices, "no_ls.rego")
	write(t, policyFile, policyOn("ls"))
	f.await("the new policy", func() bool { return f.decide("coder", "ls") == contract.Deny })

	// A broken edit keeps the last good policy and says where it broke.
	write(t, policyFile, "package harness.custom.no_ls\n\ndeny contains \"no ls\" if input.arguments.command ==\n")
	f.await("the error report", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.errs) > 0 && strings.Contains(f.errs[len(f.errs)-1], policyFile+":")
	})
	if f.decide("coder", "ls") != contract.Deny {
		t.Error("a broken edit replaced the last good policy")
	}

	// The next edit is tried again.
	write(t, policyFile, policyOn("pwd"))
	f.await("the fixed policy", func() bool {
		return f.decide("coder", "pwd") == contract.Deny && f.decide("coder", "ls") == contract.Allow
	})

	// A new role file is picked up too.
	write(t, filepath.Join(f.roles, "no-shell.toml"), role("deny"))
	f.await("the new role", func() bool { return f.decide("no-shell", "make") == contract.Deny })
}

// Directories that go away and come back (a branch switch, a fresh
// checkout), or appear only after watching began, are watched again: an edit
// in them is followed. So are files that editors save by renaming a
// temporary file over them.
func TestWatchSurvives(t *testing.T) {
	t.Parallel()
	type step struct {
		what string
		do   func(t *testing.T, f *fixture)
		want func(f *fixture) bool
	}
	// Every case starts (if its .lean-ctx exists then) with role r denying
	// the shell and the policy denying ls; its first step reaches made,
	// role r tracking the shell and the policy denying cat; then the role
	// and the policy are edited in turn, each edit giving a state that
	// differs from the one before.
	made := func(f *fixture) bool {
		return f.decide("r", "make") == contract.Allow && f.decide("coder", "cat") == contract.Deny && f.decide("coder", "ls") == contract.Allow
	}
	makeBoth := func(write func(t *testing.T, path, src string)) func(t *testing.T, f *fixture) {
		return func(t *testing.T, f *fixture) {
			write(t, filepath.Join(f.roles, "r.toml"), role("track"))
			write(t, filepath.Join(f.polices, "p.rego"), policyOn("cat"))
		}
	}
	edits := func(write func(t *testing.T, path, src string)) []step {
		return []step{
			{"an edit of the role", func(t *testing.T, f *fixture) { write(t, filepath.Join(f.roles, "r.toml"), role("deny")) },
				func(f *fixture) bool { return f.decide("r", "make") == contract.Deny }},
			{"an edit of the policy", func(t *testing.T, f *fixture) { write(t, filepath.Join(f.polices, "p.rego"), policyOn("pwd")) },
				func(f *fixture) bool {
					return f.decide("r", "pwd") == contract.Deny && f.decide("coder", "cat") == contract.Allow
				}},
			{"a second edit of the role", func(t *testing.T, f *fixture) { write(t, filepath.Join(f.roles, "r.toml"), role("track")) },
				func(f *fixture) bool { return f.decide("r", "make") == contract.Allow }},
			{"an edit of harness.toml", func(t *testing.T, f *fixture) { write(t, filepath.Join(f.lean, "harness.toml"), "# edited\n") },
				func(f *fixture) bool { return f.configIs("# edited\n") }},
			{"a second edit of harness.toml", func(t *testing.T, f *fixture) { write(t, filepath.Join(f.lean, "harness.toml"), "# again\n") },
				func(f *fixture) bool { return f.configIs("# again\n") }},
		}
	}
	noPolicy := func(f *fixture) bool { return f.decide("coder", "ls") == contract.Allow }
	for _, tt := range []struct {
		name   string
		before bool // the project's .lean-ctx exists when watching begins
		steps  []step
	}{
		{"role directory removed and made again", true, append([]step{
			{"the role's directory made again", func(t *testing.T, f *fixture) {
				removeAll(t, f.roles)
				write(t, filepath.Join(f.roles, "r.toml"), role("track"))
				write(t, filepath.Join(f.polices, "p.rego"), policyOn("cat"))
			}, made},
		}, edits(write)...)},
		{"policy directory removed and made again", true, append([]step{
			{"the policy directory made again", func(t *testing.T, f *fixture) {
				removeAll(t, f.polices)
				makeBoth(write)(t, f)
			}, made},
		}, edits(write)...)},
		{"both removed, then made again one by one", true, append([]step{
			{"both gone", func(t *testing.T, f *fixture) { removeAll(t, f.roles); removeAll(t, f.polices) }, noPolicy},
			{"the roles back", func(t *testing.T, f *fixture) { write(t, filepath.Join(f.roles, "r.toml"), role("track")) },
				func(f *fixture) bool { return f.decide("r", "make") == contract.Allow }},
			{"the policies back", func(t *testing.T, f *fixture) { write(t, filepath.Join(f.polices, "p.rego"), policyOn("cat")) }, made},
		}, edits(write)...)},
		{".lean-ctx removed and made again", true, append([]step{
			{"a fresh .lean-ctx", func(t *testing.T, f *fixture) { removeAll(t, f.lean); makeBoth(write)(t, f) }, made},
		}, edits(write)...)},
		{".lean-ctx removed, then made again later", true, append([]step{
			{"no .lean-ctx", func(t *testing.T, f *fixture) { removeAll(t, f.lean) }, noPolicy},
			{"a new .lean-ctx", makeBoth(write), made},
		}, edits(write)...)},
		{"directories made after watching began", false, append([]step{
			{"the directories made", makeBoth(write), made},
		}, edits(write)...)},
		{"files saved by renaming over them", true, append([]step{
			{"both saved", makeBoth(writeOver), made},
		}, edits(writeOver)...)},
		{"directories made later, files saved by renaming", false, append([]step{
			{"the directories made", makeBoth(writeOver), made},
		}, edits(writeOver)...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if tt.before {
				lean := filepath.Join(root, ".lean-ctx")
				write(t, filepath.Join(lean, "roles", "r.toml"), role("deny"))
				write(t, filepath.Join(lean, "policies", "p.rego"), policyOn("ls"))
				write(t, filepath.Join(lean, "harness.toml"), "")
			}
			f := watchProject(t, root)
			if tt.before && (f.decide("r", "make") != contract.Deny || f.decide("coder", "ls") != contract.Deny) {
				t.Fatal("the project's files were not loaded at start")
			}
			for _, s := range tt.steps {
				s.do(t, f)
				f.await(s.what, func() bool { return s.want(f) })
			}
		})
	}
}
