// Package hookclient is the hook process's side of the hook daemon (see
// hookd): the protocol on the daemon's socket, where the socket is, which
// daemon may be believed, the deadlines of a hook call, and the answers
// of a call the harness did not decide. It links none of the policy
// engine, the MCP library or the tokenizer, so that a hook binary built on
// it alone (cmd/harness-hook) starts about as fast as a bare Go process;
// the harness itself (hookd, cmd/harness) uses it too, so that both speak
// the same protocol and refuse the same way.
package hookclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
)

// Timeout is the timeout of the installed hook in Claude Code's settings.
// Claude Code lets the tool run when its hook takes longer, so the hook
// process answers well within it (Deadline).
const Timeout = 30 * time.Second

// The deadlines of a hook call, from the outside in. Claude Code lets a
// tool run when its hook outlasts the timeout it was installed with
// (Timeout), so a hook process answers well before that whatever it is
// doing: within Deadline, after which it refuses the call. Its wait for
// the daemon (CallTimeout) ends before that, and the daemon refuses a
// call it has not decided within DecideTimeout, before the hook process
// stops waiting. None of them depends on the policy engine's own
// evaluation deadline.
const (
	// Deadline bounds a whole hook process: reading the payload, waiting
	// for the daemon, loading and deciding in the process.
	Deadline = Timeout * 2 / 3
	// CallTimeout bounds a hook process's wait for the daemon's answer.
	CallTimeout = Deadline * 3 / 4
	// DecideTimeout bounds the daemon's work on one call.
	DecideTimeout = CallTimeout - 2*time.Second
)

// dialTimeout bounds the wait for a daemon to take the connection.
const dialTimeout = 100 * time.Millisecond

// MaxPayload bounds a hook payload read from stdin.
const MaxPayload = 64 << 20

// ExitRefused is the exit code that blocks a PreToolUse call, Claude Code
// showing the model what the hook wrote on stderr.
const ExitRefused = 2

// Response is what the hook process prints and how it exits; the daemon
// sends it as JSON.
type Response struct {
	Stdout []byte
	Stderr string
	Exit   int
}

// Request is one hook call handed to the daemon: the payload and what the
// hook process knows of its surroundings.
type Request struct {
	Payload json.RawMessage   `json:"payload"`
	Project string            `json:"project"`
	WorkDir string            `json:"work_dir"`
	Env     map[string]string `json:"env"`
}

// ProjectDirVar is the variable Claude Code sets for its hooks: the
// directory it was started in, which the agent's cd does not move.
const ProjectDirVar = "CLAUDE_PROJECT_DIR"

// EnvVars are the environment variables a request carries besides
// ProjectDirVar and PathVar: those that change what a load means
// (app.EnvVars, which a test holds equal).
var EnvVars = []string{"HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "LEAN_CTX_ROLE"}

// PathVar is the hook's PATH, which a request carries too: a load
// protects the harness the PATH finds when it is a link to the harness
// binary (~/.local/bin/harness) and the small hook binary beside it, and
// the daemon must look for it on the hook's PATH, not on its own, which
// is that of whoever started it (an agent with a shell can start the
// harness binary as the daemon, with a PATH of its choosing). An
// installed hook's command line does not pin it (hook.PinnedVars).
const PathVar = "PATH"

// Env is what a hook process knows of its surroundings: its working
// directory, the user's home directory and its environment (the fields of
// app.Env).
type Env struct {
	WorkDir string
	Home    string
	Getenv  func(string) string
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// NewRequest is the request of a hook call of payload, made in env.
func NewRequest(payload []byte, project string, env Env) Request {
	req := Request{Payload: payload, Project: project, WorkDir: env.WorkDir, Env: map[string]string{}}
	for _, k := range append(slices.Clone(EnvVars), ProjectDirVar, PathVar) {
		if env.Getenv != nil {
			req.Env[k] = env.Getenv(k)
		}
	}
	if req.Env["HOME"] == "" {
		req.Env["HOME"] = env.Home
	}
	return req
}

// StateDir is the user's state directory of the harness, where the ledger
// and the daemon's socket are: $XDG_STATE_HOME/lean-ctx/harness, with
// ~/.local/state for an unset XDG_STATE_HOME (app.StateDir, which a test
// holds equal).
func StateDir(env Env) string {
	state := env.getenv("XDG_STATE_HOME")
	if state == "" {
		state = filepath.Join(env.Home, ".local", "state")
	}
	return filepath.Join(state, "lean-ctx", "harness")
}

// SocketPath is the daemon's socket for env: hook.sock in the state
// directory. The daemon makes the directory 0700 and the socket 0600.
func SocketPath(env Env) string { return filepath.Join(StateDir(env), "hook.sock") }

// Call hands req to the daemon listening on socket. It is false when none
// answered the connection, or the process that did is not this user's
// program (the harness binary; "" for this very program: see trusted),
// and the call is then the caller's to answer; once the request is sent,
// any failure is the answer (a call must never be decided twice).
func Call(socket string, req Request, program string) (Response, bool) {
	if !json.Valid(req.Payload) {
		return Response{}, false
	}
	msg := appendRequest(nil, req)
	if msg == nil {
		return Response{}, false
	}
	conn, err := dialUnix(socket, dialTimeout, time.Now().Add(CallTimeout))
	if err != nil {
		return Response{}, false
	}
	defer conn.Close()
	if err := trusted(conn.fd, program); err != nil {
		return Response{}, false
	}
	if _, err := conn.Write(msg); err != nil {
		return Response{}, false
	}
	var resp Response
	// The answer is bounded as the payload is: a peer that streams
	// without end is refused, not waited for.
	if err := json.NewDecoder(io.LimitReader(conn, MaxPayload)).Decode(&resp); err != nil {
		return Failure(req.Payload, fmt.Errorf("the hook daemon did not answer: %v", err)), true
	}
	return resp, true
}

// Unanswered answers a call the harness did not decide, saying why: a
// PreToolUse (or anything else) is refused, a finished call is not
// charged, and the agent is stopped (see Uncharged).
func Unanswered(payload []byte, why string) Response {
	if IsPost(payload) {
		return Uncharged(why)
	}
	return Response{Stderr: "harness hook: " + why + "; refusing the call\n", Exit: ExitRefused}
}

// Failure answers when the harness itself cannot run (a broken role file,
// an unreachable ledger, no harness binary): a tool call is refused, with
// the reason, and a finished call that could not be charged stops the
// agent (see Uncharged).
func Failure(payload []byte, err error) Response {
	why := fmt.Sprintf("the harness cannot decide: %v", err)
	if IsPost(payload) {
		return Uncharged(why)
	}
	return Response{Stderr: "harness hook: " + why + "\nharness hook: refusing the call (fix the error, or run: harness check)\n", Exit: ExitRefused}
}

// IsPost says whether payload is the hook input of a finished call, which
// charges what reached the model (PostToolUse, PostToolUseFailure).
func IsPost(payload []byte) bool {
	switch gjson.GetBytes(payload, "hook_event_name").String() {
	case "PostToolUse", "PostToolUseFailure":
		return true
	}
	return false
}

// Uncharged answers a finished call that could not be charged. Its result
// has reached the model, and the agent could make that happen at will (it
// can break a project file, or hold the daemon, while its call runs): it
// must not be free. So Claude Code is told to stop the agent (continue:
// false), the person shown why; the call has run, so the exit is 0.
func Uncharged(why string) Response {
	b, _ := json.Marshal(map[string]any{"continue": false, "stopReason": "harness: " + why +
		"; what this tool call returned was not charged, so the agent is stopped (fix the cause, or run: harness check; then resume)"})
	return Response{Stdout: append(b, '\n'), Stderr: "harness hook: " + why + "; nothing was charged: stopping the agent\n"}
}

// Start starts a daemon in the background, detached (its own session, in
// /): command is the program and arguments that run it (harness hook
// daemon).
func Start(command ...string) error {
	if len(command) == 0 {
		return errors.New("hookclient: no command to start")
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
