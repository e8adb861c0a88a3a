package watch

import (
	"context"
	"fmt"
	"maps"
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

// fixture watches one project's .lean-ctx as the gateway does. With an
// engine, each rebuild loads the roles and policies into it; without, each
// rebuild reads the files (roles/*.toml, policies/*.rego, harness.toml)
// into a snapshot, which is all the watching needs.
type fixture struct {
	t                     *testing.T
	lean, roles, policies string
	engine                *policy.Engine
	kicks                 chan struct{} // a kick after each rebuild, good or failed
	mu                    sync.Mutex
	errs                  []string
	files                 map[string]string // path under .lean-ctx → content, as the last rebuild read them
}

// watchProject starts watching root's .lean-ctx (whatever of it exists) and
// returns once the watches are in place.
func watchProject(t *testing.T, root string, withEngine bool) *fixture {
	t.Helper()
	lean := filepath.Join(root, ".lean-ctx")
	f := &fixture{t: t, lean: lean, roles: filepath.Join(lean, "roles"), policies: filepath.Join(lean, "policies"),
		kicks: make(chan struct{}, 1)}
	load := func() (*compiler.Document, []compiler.Module, error) {
		set, err := roles.Load(roles.Dirs{Project: []string{f.roles}})
		if err != nil {
			return nil, nil, err
		}
		mods, err := custom.Load([]custom.Dir{{Path: f.policies, Bundle: "policies/project"}})
		return compiler.Compile(set, compiler.DefaultConfig()), mods, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	rebuild := func() error {
		files := map[string]string{}
		for dir, suffix := range map[string]string{"roles": ".toml", "policies": ".rego"} {
			entries, _ := os.ReadDir(filepath.Join(lean, dir))
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), suffix) {
					src, _ := os.ReadFile(filepath.Join(lean, dir, e.Name()))
					files[dir+"/"+e.Name()] = string(src)
				}
			}
		}
		if src, err := os.ReadFile(filepath.Join(lean, "harness.toml")); err == nil {
			files["harness.toml"] = string(src)
		}
		f.mu.Lock()
		f.files = files
		f.mu.Unlock()
		return nil
	}
	if withEngine {
		doc, mods, err := load()
		if err != nil {
			t.Fatal(err)
		}
		if f.engine, err = policy.New(ctx, doc, mods...); err != nil {
			t.Fatal(err)
		}
		rebuild = func() error {
			doc, mods, err := load()
			if err != nil {
				return err
			}
			return f.engine.Reload(ctx, doc, mods...)
		}
	} else {
		rebuild()
	}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Paths:    []string{f.roles, f.policies, filepath.Join(lean, "harness.toml")},
			Debounce: 20 * time.Millisecond,
			Rebuild:  rebuild,
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

// read is what the last rebuild read.
func (f *fixture) read() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files
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
	f := watchProject(t, t.TempDir(), true)

	// A policy appears (its directory did not exist when watching began).
	policyFile := filepath.Join(f.policies, "no_ls.rego")
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
// checkout), are renamed away, or appear only after watching began, are
// watched again: an edit in them is followed. So are files that editors
// save by renaming a temporary file over them. Each step changes the files
// and waits until a rebuild has read exactly what they hold then.
func TestWatchSurvives(t *testing.T) {
	t.Parallel()
	// A step, under .lean-ctx: directories removed ("" for .lean-ctx
	// itself) or renamed out of it, then files written (by renaming a
	// temporary file over them, with over).
	type step struct {
		what     string
		remove   []string
		moveAway []string
		write    map[string]string
		over     bool
	}
	start := map[string]string{"roles/r.toml": "# role 1\n", "policies/p.rego": "# policy 1\n", "harness.toml": ""}
	made := map[string]string{"roles/r.toml": "# role 2\n", "policies/p.rego": "# policy 2\n", "harness.toml": ""}
	edits := func(over bool) []step {
		return []step{
			{what: "an edit of the role", write: map[string]string{"roles/r.toml": "# role 3\n"}, over: over},
			{what: "an edit of the policy", write: map[string]string{"policies/p.rego": "# policy 3\n"}, over: over},
			{what: "a new role", write: map[string]string{"roles/s.toml": "# role s\n"}, over: over},
			{what: "a second edit of the role", write: map[string]string{"roles/r.toml": "# role 4\n"}, over: over},
			{what: "an edit of harness.toml", write: map[string]string{"harness.toml": "# edited\n"}, over: over},
			{what: "a second edit of harness.toml", write: map[string]string{"harness.toml": "# again\n"}, over: over},
		}
	}
	for _, tt := range []struct {
		name   string
		before bool // .lean-ctx holds start when watching begins
		steps  []step
	}{
		{"role directory removed and made again", true, append([]step{
			{what: "the roles made again", remove: []string{"roles"}, write: map[string]string{"roles/r.toml": "# role 2\n"}},
		}, edits(false)...)},
		{"policy directory removed and made again", true, append([]step{
			{what: "the policies made again", remove: []string{"policies"}, write: map[string]string{"policies/p.rego": "# policy 2\n"}},
		}, edits(false)...)},
		{"both removed, then made again one by one", true, append([]step{
			{what: "both gone", remove: []string{"roles", "policies"}},
			{what: "the roles back", write: map[string]string{"roles/r.toml": "# role 2\n"}},
			{what: "the policies back", write: map[string]string{"policies/p.rego": "# policy 2\n"}},
		}, edits(false)...)},
		{"role directory renamed away, another put in its place", true, append([]step{
			{what: "a new roles directory", moveAway: []string{"roles"}, write: map[string]string{"roles/r.toml": "# role 2\n"}},
		}, edits(false)...)},
		{".lean-ctx removed and made again", true, append([]step{
			{what: "a fresh .lean-ctx", remove: []string{""}, write: made},
		}, edits(false)...)},
		{".lean-ctx removed, then made again later", true, append([]step{
			{what: "no .lean-ctx", remove: []string{""}},
			{what: "a new .lean-ctx", write: made},
		}, edits(false)...)},
		{".lean-ctx renamed away, then made again", true, append([]step{
			{what: "no .lean-ctx", moveAway: []string{""}},
			{what: "a new .lean-ctx", write: made},
		}, edits(false)...)},
		{"directories made after watching began", false, append([]step{
			{what: "the directories made", write: made},
		}, edits(false)...)},
		{"files saved by renaming over them", true, edits(true)},
		{"directories made later, files saved by renaming", false, append([]step{
			{what: "the directories made", write: made, over: true},
		}, edits(true)...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			lean := filepath.Join(root, ".lean-ctx")
			want := map[string]string{}
			if tt.before {
				for name, src := range start {
					write(t, filepath.Join(lean, name), src)
				}
				maps.Copy(want, start)
			}
			f := watchProject(t, root, false)
			if got := f.read(); !maps.Equal(got, want) {
				t.Fatalf("at start: read %v, want %v", got, want)
			}
			for i, s := range tt.steps {
				gone := func(dir string) {
					maps.DeleteFunc(want, func(name, _ string) bool { return dir == "" || strings.HasPrefix(name, dir+"/") })
				}
				for _, dir := range s.remove {
					removeAll(t, filepath.Join(lean, dir))
					gone(dir)
				}
				for _, dir := range s.moveAway {
					if err := os.Rename(filepath.Join(lean, dir), filepath.Join(root, fmt.Sprintf("old-%d", i))); err != nil {
						t.Fatal(err)
					}
					gone(dir)
				}
				for name, src := range s.write {
					if s.over {
						writeOver(t, filepath.Join(lean, name), src)
					} else {
						write(t, filepath.Join(lean, name), src)
					}
					want[name] = src
				}
				f.await(s.what, func() bool { return maps.Equal(f.read(), want) })
			}
		})
	}
}
