package hookd

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/hookclient"
)

// Run as a daemon when the test binary is started by Start (see
// TestStartDetachesADaemon).
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "hookd-test-daemon" {
		sock := os.Args[2]
		if err := Serve(context.Background(), Options{Socket: sock, Idle: time.Minute}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// world is a home and a project, with a role file the tests edit.
type world struct {
	home, project string
}

func newWorld(t *testing.T) world {
	t.Helper()
	w := world{home: t.TempDir(), project: t.TempDir()}
	w.role(t, "[role]\ninherits = \"coder\"\n")
	// A busy machine's decisions are not what these tests are about: the
	// policy's own deadline is a minute, not a second.
	path := filepath.Join(w.home, ".lean-ctx", "harness.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("[policy]\ntimeout = \"1m\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// role writes the project's role "team".
func (w world) role(t *testing.T, toml string) {
	t.Helper()
	path := filepath.Join(w.project, ".lean-ctx", "roles", "team.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// request is a hook call of Bash in the world's project, in role "team".
func (w world) request(t *testing.T, event, session string) Request {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{
		"session_id": session, "cwd": w.project, "hook_event_name": event,
		"tool_name": "Bash", "tool_input": map[string]any{"command": "go test ./..."},
		"tool_response": map[string]any{"stdout": "ok", "stderr": ""},
	})
	vars := map[string]string{"HOME": w.home, "LEAN_CTX_ROLE": "team", "XDG_STATE_HOME": filepath.Join(w.home, "state")}
	return NewRequest(payload, "", app.Env{WorkDir: w.home, Home: w.home, Getenv: func(k string) string { return vars[k] }})
}

// decision is the permission decision of a PreToolUse answer ("" for none).
func decision(t *testing.T, r hook.Response) string {
	t.Helper()
	if len(r.Stdout) == 0 {
		return ""
	}
	var a struct {
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(r.Stdout, &a); err != nil {
		t.Fatalf("answer %q: %v", r.Stdout, err)
	}
	return a.HookSpecificOutput.PermissionDecision
}

// serve runs a daemon on a socket of its own until the test ends; done is
// closed when Serve returns.
func serve(t *testing.T, o Options) (socket string, done chan error) {
	t.Helper()
	if o.Socket == "" {
		dir, err := os.MkdirTemp("", "hookd") // short: a socket path has a length limit
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		o.Socket = filepath.Join(dir, "hook.sock")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- Serve(ctx, o) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the daemon to listen", func() bool {
		c, err := net.Dial("unix", o.Socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return o.Socket, done
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// The daemon answers as the process would: a PreToolUse decided on the
// project of the payload's cwd, a PostToolUse charged.
func TestDaemonAnswersAsLocal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock, _ := serve(t, Options{})
	for _, tt := range []struct {
		event, session string
	}{{"PreToolUse", "a"}, {"PostToolUse", "a"}, {"PreToolUse", "b"}} {
		req := w.request(t, tt.event, tt.session)
		got, ok := Call(sock, req)
		if !ok {
			t.Fatalf("%s: the daemon did not take the call", tt.event)
		}
		want := Local(context.Background(), w.request(t, tt.event, tt.session+"-local"))
		if decision(t, got) != decision(t, want) || got.Exit != want.Exit {
			t.Errorf("%s: daemon %+v, in process %+v", tt.event, got, want)
		}
	}
	// Calls that no daemon takes are the caller's to answer.
	if _, ok := Call(filepath.Join(t.TempDir(), "none.sock"), w.request(t, "PreToolUse", "c")); ok {
		t.Error("a socket nobody listens on answered")
	}
	bad := w.request(t, "PreToolUse", "c")
	bad.Payload = []byte("{oops")
	if _, ok := Call(sock, bad); ok {
		t.Error("a payload that is not JSON was sent to the daemon")
	}
}

// An edit of a file the load read reaches the next answer; calls in flight
// are answered by one load or the other, never by a closed one.
func TestDaemonReloadsOnEdits(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock, _ := serve(t, Options{})
	if r, _ := Call(sock, w.request(t, "PreToolUse", "s1")); decision(t, r) != "" || r.Exit != 0 {
		t.Fatalf("before the edit: %+v", r)
	}
	w.role(t, "[role]\ninherits = \"coder\"\nshell_policy = \"deny\"\n")
	r, _ := Call(sock, w.request(t, "PreToolUse", "s2"))
	if decision(t, r) != "deny" || !strings.Contains(string(r.Stdout), "shell_denied") {
		t.Errorf("after the edit: %s", r.Stdout)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for i := range 20 {
		wg.Go(func() {
			r, ok := Call(sock, w.request(t, "PreToolUse", "c"+strconv.Itoa(i)))
			if d := decision(t, r); !ok || r.Exit != 0 || (d != "deny" && d != "") {
				errs <- string(r.Stdout) + r.Stderr
			}
		})
		if i == 10 {
			w.role(t, "[role]\ninherits = \"coder\"\n")
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// An edit that keeps the file's size and modification time is seen too.
	file := filepath.Join(w.project, ".lean-ctx", "roles", "team.toml")
	w.role(t, "[role]\ninherits = \"coder\"\nshell_policy= \"track\"\n")
	if r, _ := Call(sock, w.request(t, "PreToolUse", "s4")); decision(t, r) != "" || r.Exit != 0 {
		t.Fatalf("before the same-size edit: %+v", r)
	}
	keepStat(t, file, "[role]\ninherits = \"coder\"\nshell_policy = \"deny\"\n")
	if r, _ := Call(sock, w.request(t, "PreToolUse", "s5")); decision(t, r) != "deny" || !strings.Contains(string(r.Stdout), "shell_denied") {
		t.Errorf("after an edit keeping size and time: %s%s", r.Stdout, r.Stderr)
	}
	// A broken edit refuses the call with the file's error.
	w.role(t, "[role]\ninherits = \"nobody\"\n")
	r, _ = Call(sock, w.request(t, "PreToolUse", "s3"))
	if r.Exit != hook.ExitRefused || !strings.Contains(r.Stderr, "team.toml") || !strings.Contains(r.Stderr, "refusing the call") {
		t.Errorf("after a broken edit: %+v", r)
	}
}

// A daemon exits when idle, when its socket is gone, and when another
// holds the socket's lock it does not start.
func TestDaemonLifetime(t *testing.T) {
	t.Parallel()
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		// The grace bounds how long Serve waits for the load to close (its
		// ledger and logs, in the world's directories): the default second
		// can pass on a busy machine under -race, and the directories'
		// cleanup then races with the closing.
		sock, done := serve(t, Options{Idle: 300 * time.Millisecond, Grace: time.Minute})
		Call(sock, w.request(t, "PreToolUse", "i")) // a call puts the exit off
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
			done <- err // for the cleanup
		case <-time.After(20 * time.Second):
			t.Fatal("an idle daemon did not exit")
		}
		if _, err := os.Stat(sock); err == nil {
			t.Error("the socket is left behind")
		}
	})
	t.Run("socket gone", func(t *testing.T) {
		t.Parallel()
		sock, done := serve(t, Options{})
		os.Remove(sock)
		select {
		case err := <-done:
			done <- err
		case <-time.After(20 * time.Second):
			t.Fatal("a daemon whose socket is gone did not exit")
		}
	})
	t.Run("one at a time", func(t *testing.T) {
		t.Parallel()
		sock, _ := serve(t, Options{})
		second := make(chan error, 1)
		go func() { second <- Serve(context.Background(), Options{Socket: sock}) }()
		select {
		case err := <-second:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a second daemon on the same socket did not give way")
		}
		if c, err := net.Dial("unix", sock); err != nil {
			t.Errorf("the first daemon stopped serving: %v", err)
		} else {
			c.Close()
		}
	})
}

// Start detaches the command it is given: here this test binary, which
// serves as a daemon (see TestMain), and answers calls after the test's
// own process has let it go.
func TestStartDetachesADaemon(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir, err := os.MkdirTemp("", "hookd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "hook.sock")
	if err := Start(os.Args[0], "hookd-test-daemon", sock); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the started daemon", func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	b, _ := os.ReadFile(sock + ".lock")
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	defer func() {
		if p, err := os.FindProcess(pid); err == nil && pid > 0 {
			p.Kill()
		}
	}()
	if pid == os.Getpid() || pid <= 0 {
		t.Fatalf("the daemon's pid is %d", pid)
	}
	if r, ok := Call(sock, w.request(t, "PreToolUse", "started")); !ok || r.Exit != 0 {
		t.Errorf("the started daemon answered %+v, %v", r, ok)
	}
	if err := Start(); err == nil {
		t.Error("Start without a command succeeded")
	}
}

// When the harness cannot run, a PreToolUse is refused and a PostToolUse
// says nothing was charged.
func TestFailure(t *testing.T) {
	t.Parallel()
	pre := Failure([]byte(`{"hook_event_name":"PreToolUse"}`), os.ErrPermission)
	if pre.Exit != hook.ExitRefused || !strings.Contains(pre.Stderr, "refusing the call") {
		t.Errorf("PreToolUse: %+v", pre)
	}
	post := Failure([]byte(`{"hook_event_name":"PostToolUse"}`), os.ErrPermission)
	if post.Exit != 0 || !strings.Contains(post.Stderr, "nothing was charged") {
		t.Errorf("PostToolUse: %+v", post)
	}
}

// From a subdirectory with a .lean-ctx of its own, the repository's rules
// still apply, and each directory keeps its own load.
func TestDaemonNestedLayers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := os.MkdirAll(filepath.Join(w.project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(w.project, ".lean-ctx", "policies", "no_tests.rego")
	if err := os.MkdirAll(filepath.Dir(policy), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte("package harness.custom.no_tests\n\ndeny contains \"no tests here\" if input.arguments.command == \"go test ./...\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(w.project, "pkg")
	if err := os.MkdirAll(filepath.Join(pkg, ".lean-ctx", "roles"), 0o755); err != nil {
		t.Fatal(err)
	}
	sock, _ := serve(t, Options{})
	for i, dir := range []string{pkg, w.project, pkg} {
		sub := world{home: w.home, project: dir}
		r, ok := Call(sock, sub.request(t, "PreToolUse", "n"+strconv.Itoa(i)))
		if !ok || decision(t, r) != "deny" || !strings.Contains(string(r.Stdout), "no tests here") {
			t.Errorf("call %d, from %s: %+v", i, dir, r)
		}
	}
}

// The hook process's side (hookclient) carries every variable a load
// reads, and looks for the socket where the daemon listens: in the state
// directory of the ledger.
func TestClientSideAgrees(t *testing.T) {
	t.Parallel()
	if !slices.Equal(hookclient.EnvVars, app.EnvVars) {
		t.Errorf("hookclient.EnvVars %q, app.EnvVars %q", hookclient.EnvVars, app.EnvVars)
	}
	for _, vars := range []map[string]string{{}, {"XDG_STATE_HOME": "/state"}, {"XDG_STATE_HOME": "rel"}} {
		env := app.Env{WorkDir: "/w", Home: "/home/u", Getenv: func(k string) string { return vars[k] }}
		if got, want := SocketPath(env), filepath.Join(app.StateDir(env), "hook.sock"); got != want {
			t.Errorf("%v: socket %s, want %s", vars, got, want)
		}
	}
}
