package hookclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is also a stand-in harness: run as
// `hook claude-code ARGS...` (see Delegate), it prints its stdin on
// stdout, its arguments on stderr, and exits with $FAKE_HARNESS_EXIT, or
// kills itself when that is "kill", or waits for a signal when "hang".
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "hook" && os.Args[2] == "claude-code" {
		b, _ := io.ReadAll(os.Stdin)
		os.Stdout.Write(b)
		fmt.Fprintf(os.Stderr, "args %q\n", os.Args[3:])
		switch code := os.Getenv("FAKE_HARNESS_EXIT"); code {
		case "kill":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		case "hang":
			select {}
		case "":
			os.Exit(0)
		default:
			var n int
			fmt.Sscan(code, &n)
			os.Exit(n)
		}
	}
	os.Exit(m.Run())
}

const (
	pre  = `{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"}}`
	post = `{"hook_event_name":"PostToolUse","session_id":"s","tool_name":"Bash","tool_response":{"stdout":"ok"}}`
)

func executable(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The harness a hook binary runs is beside it, else on the PATH in an
// absolute directory; never in a relative one, which the hook's working
// directory (the project, the agent's) would choose.
func TestFindHarness(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	beside, onPath, plain, dirOnly := filepath.Join(root, "beside"), filepath.Join(root, "path"), filepath.Join(root, "plain"), filepath.Join(root, "dir")
	executable(t, filepath.Join(beside, "harness"))
	executable(t, filepath.Join(onPath, "harness"))
	os.MkdirAll(plain, 0o755)
	os.WriteFile(filepath.Join(plain, "harness"), []byte("not executable"), 0o644)
	os.MkdirAll(filepath.Join(dirOnly, "harness"), 0o755)
	empty := t.TempDir()
	// A relative PATH entry that holds a harness, from the test's working
	// directory.
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, onPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, self, path, want string
	}{
		{"beside the hook", filepath.Join(beside, "harness-hook"), onPath, filepath.Join(beside, "harness")},
		{"on the PATH", filepath.Join(empty, "harness-hook"), strings.Join([]string{plain, dirOnly, onPath}, string(filepath.ListSeparator)), filepath.Join(onPath, "harness")},
		{"not executable, a directory", filepath.Join(empty, "harness-hook"), strings.Join([]string{plain, dirOnly}, string(filepath.ListSeparator)), ""},
		{"a relative PATH entry", filepath.Join(empty, "harness-hook"), rel, ""},
		{"an empty PATH entry", filepath.Join(empty, "harness-hook"), string(filepath.ListSeparator), ""},
		{"no self, no PATH", "", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindHarness(tt.self, tt.path)
			if got != tt.want || (err != nil) != (tt.want == "") {
				t.Errorf("FindHarness(%q, %q) = %q, %v; want %q", tt.self, tt.path, got, err, tt.want)
			}
		})
	}
}

// daemon is a stand-in daemon in this process, on a socket of its own:
// it answers every request with answer, and counts them.
func daemon(t *testing.T, answer Response) (socket string, calls chan Request) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket = filepath.Join(dir, "hook.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	calls = make(chan Request, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var req Request
			if json.NewDecoder(c).Decode(&req) == nil {
				calls <- req
				json.NewEncoder(c).Encode(answer)
			}
			c.Close()
		}
	}()
	return socket, calls
}

// A client asks the daemon when it runs the harness it was given, and
// answers with Local otherwise; with no Local, it refuses (a PostToolUse
// is not charged); the hook process's warning goes before every answer
// but Local's.
func TestClient(t *testing.T) {
	t.Parallel()
	fromDaemon := Response{Stdout: []byte("daemon\n"), Stderr: "from the daemon\n"}
	socket, calls := daemon(t, fromDaemon)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "harness")
	executable(t, other)
	fromLocal := Response{Stdout: []byte("local\n"), Stderr: "from local\n", Exit: 0}
	local := func(context.Context, Request) Response { return fromLocal }
	for _, tt := range []struct {
		name     string
		program  string
		socket   string
		local    func(context.Context, Request) Response
		payload  string
		want     Response
		asked    bool
		failRefs string
	}{
		{"the daemon runs the harness", self, socket, local, pre, Response{Stdout: []byte("daemon\n"), Stderr: "warned\nfrom the daemon\n"}, true, ""},
		{"this very program", "", socket, local, pre, Response{Stdout: []byte("daemon\n"), Stderr: "warned\nfrom the daemon\n"}, true, ""},
		{"the daemon runs another program", other, socket, local, pre, fromLocal, false, ""},
		{"no daemon", self, filepath.Join(t.TempDir(), "none.sock"), local, pre, fromLocal, false, ""},
		{"no socket", self, "", local, pre, fromLocal, false, ""},
		{"not JSON is not the daemon's", self, socket, local, "{oops", fromLocal, false, ""},
		{"no Local, PreToolUse", other, socket, nil, pre, Response{Exit: ExitRefused}, false, "refusing the call"},
		{"no Local, PostToolUse", other, socket, nil, post, Response{}, false, "nothing was charged"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Client{Socket: tt.socket, Program: tt.program, Local: tt.local, Warning: "warned\n", Env: Env{Getenv: func(string) string { return "" }}}
			got := c.Answer(context.Background(), strings.NewReader(tt.payload))
			asked := false
			select {
			case req := <-calls:
				asked = true
				if string(req.Payload) != tt.payload {
					t.Errorf("the daemon got %s", req.Payload)
				}
			default:
			}
			if asked != tt.asked {
				t.Errorf("the daemon asked: %v, want %v", asked, tt.asked)
			}
			if tt.failRefs != "" {
				if got.Exit != tt.want.Exit || stopsAgent(got.Stdout) != IsPost([]byte(tt.payload)) || !strings.HasPrefix(got.Stderr, "warned\nharness hook: the harness cannot decide: ") || !strings.Contains(got.Stderr, tt.failRefs) {
					t.Errorf("got %+v", got)
				}
				return
			}
			if string(got.Stdout) != string(tt.want.Stdout) || got.Stderr != tt.want.Stderr || got.Exit != tt.want.Exit {
				t.Errorf("got %q %q %d, want %q %q %d", got.Stdout, got.Stderr, got.Exit, tt.want.Stdout, tt.want.Stderr, tt.want.Exit)
			}
		})
	}
}

// A call Local has not answered by the deadline is refused (a PostToolUse
// is not charged, and stops the agent), with the hook process's warning, and Local's context
// ends.
func TestClientDeadline(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		payload, stderr string
		exit            int
	}{
		{pre, "warned\nharness hook: the harness did not answer within 50ms; refusing the call\n", ExitRefused},
		{post, "warned\nharness hook: the harness did not answer within 50ms; nothing was charged: stopping the agent\n", 0},
	} {
		ended := make(chan struct{})
		c := Client{Deadline: 50 * time.Millisecond, Warning: "warned\n", Local: func(ctx context.Context, _ Request) Response {
			<-ctx.Done()
			close(ended)
			return Response{Stdout: []byte("too late")}
		}}
		got := c.Answer(context.Background(), strings.NewReader(tt.payload))
		if got.Stderr != tt.stderr || got.Exit != tt.exit || stopsAgent(got.Stdout) != IsPost([]byte(tt.payload)) {
			t.Errorf("got %+v", got)
		}
		<-ended
	}
	if d := (Client{Deadline: time.Hour}).TimeLimit(); d != Deadline {
		t.Errorf("a longer deadline: %v", d)
	}
	if !(DecideTimeout < CallTimeout && CallTimeout < Deadline && Deadline <= Timeout*3/4) {
		t.Errorf("decide %v, call %v, process %v, installed %v", DecideTimeout, CallTimeout, Deadline, Timeout)
	}
}

// Delegate answers what the harness printed and its exit code, exactly;
// a harness that cannot run or dies answers as one that cannot decide.
func TestDelegate(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, program, exit, payload string
		args                         []string
		want                         Response
		failure                      string
	}{
		{"allowed", self, "", pre, nil, Response{Stdout: []byte(pre), Stderr: "args []\n"}, ""},
		{"refused, with its flags", self, "2", pre, []string{"--project", "/p"}, Response{Stdout: []byte(pre), Stderr: "args [\"--project\" \"/p\"]\n", Exit: 2}, ""},
		{"an error", self, "1", pre, nil, Response{Stdout: []byte(pre), Stderr: "args []\n", Exit: 1}, ""},
		{"killed, PreToolUse", self, "kill", pre, nil, Response{Exit: ExitRefused}, "signal: killed"},
		{"killed, PostToolUse", self, "kill", post, nil, Response{}, "nothing was charged"},
		{"no such program", filepath.Join(t.TempDir(), "harness"), "", pre, nil, Response{Exit: ExitRefused}, "no such file"},
		{"told to stop", self, "hang", pre, nil, Response{Exit: ExitRefused}, "signal: terminated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("FAKE_HARNESS_EXIT", tt.exit)
			ctx := context.Background()
			if tt.exit == "hang" { // this process is told to stop while the harness runs
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
			}
			got := Delegate(tt.program, tt.args)(ctx, Request{Payload: json.RawMessage(tt.payload)})
			if tt.failure != "" {
				if got.Exit != tt.want.Exit || stopsAgent(got.Stdout) != IsPost([]byte(tt.payload)) || !strings.HasPrefix(got.Stderr, "harness hook: the harness cannot decide: running ") || !strings.Contains(got.Stderr, tt.failure) {
					t.Errorf("got %+v", got)
				}
				return
			}
			if string(got.Stdout) != string(tt.want.Stdout) || got.Stderr != tt.want.Stderr || got.Exit != tt.want.Exit {
				t.Errorf("got %q %q %d, want %q %q %d", got.Stdout, got.Stderr, got.Exit, tt.want.Stdout, tt.want.Stderr, tt.want.Exit)
			}
		})
	}
}

// A request carries the variables a load reads, the project's and the
// hook's PATH, the home directory when $HOME is unset; the socket is in the state
// directory.
func TestRequestAndSocket(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"XDG_STATE_HOME": "/state", "LEAN_CTX_ROLE": "coder", "CLAUDE_PROJECT_DIR": "/p", "PATH": "/bin"}
	env := Env{WorkDir: "/w", Home: "/home/u", Getenv: func(k string) string { return vars[k] }}
	req := NewRequest([]byte(pre), "proj", env)
	want := map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "", "XDG_STATE_HOME": "/state", "LEAN_CTX_ROLE": "coder", "CLAUDE_PROJECT_DIR": "/p", "PATH": "/bin"}
	if fmt.Sprint(req.Env) != fmt.Sprint(want) || req.Project != "proj" || req.WorkDir != "/w" {
		t.Errorf("request %+v", req)
	}
	for _, tt := range []struct {
		state, want string
	}{
		{"/state", "/state/lean-ctx/harness/hook.sock"},
		{"", "/home/u/.local/state/lean-ctx/harness/hook.sock"},
	} {
		vars["XDG_STATE_HOME"] = tt.state
		if got := SocketPath(env); got != tt.want {
			t.Errorf("XDG_STATE_HOME=%q: %s, want %s", tt.state, got, tt.want)
		}
	}
}

// stopsAgent says whether stdout is Claude Code's answer that stops the
// agent (continue: false, with a reason), and nothing else.
func stopsAgent(stdout []byte) bool {
	var a map[string]any
	if json.Unmarshal(stdout, &a) != nil || len(a) != 2 {
		return false
	}
	reason, _ := a["stopReason"].(string)
	return a["continue"] == false && strings.Contains(reason, "not charged, so the agent is stopped")
}
