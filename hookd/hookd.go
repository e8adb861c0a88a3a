// Package hookd answers Claude Code's hook calls fast. A hook is a new
// process for every tool call; starting the harness costs about 10 ms,
// loading and compiling roles and policies about as much again, and the
// o200k_base vocabulary 13 ms more for a PostToolUse. So the hook process
// hands its payload to a daemon that keeps all of that ready, over a unix
// socket in the user's state directory (a 0700 directory; the socket is
// 0600). The daemon checks, on every call, a fingerprint of the files the
// load read (app.Location.Sources) and loads again when one changed. With
// no daemon, the hook process answers by itself the same way (Local) and
// starts one for the next calls.
//
// Every answer comes in time: Claude Code lets a tool run when its hook
// outlasts its timeout, so a hook process (Client) refuses the call when
// it has no answer by its Deadline, and the daemon refuses a call it has
// not decided within its timeout, or within a short grace once it is told
// to stop.
//
// It is transport and caching only: app loads, the hook package speaks
// Claude Code's protocol, the governor decides.
package hookd

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/hook"
)

// The deadlines of a hook call, from the outside in. Claude Code lets a
// tool run when its hook outlasts the timeout it was installed with
// (hook.Timeout), so a hook process answers well before that whatever it
// is doing: within Deadline, after which it refuses the call. Its wait for
// the daemon (CallTimeout) ends before that, and the daemon refuses a
// call it has not decided within DecideTimeout, before the hook process
// stops waiting. None of them depends on the policy engine's own
// evaluation deadline.
const (
	// Deadline bounds a whole hook process: reading the payload, waiting
	// for the daemon, loading and deciding in the process.
	Deadline = hook.Timeout * 2 / 3
	// CallTimeout bounds a hook process's wait for the daemon's answer.
	CallTimeout = Deadline * 3 / 4
	// DecideTimeout bounds the daemon's work on one call.
	DecideTimeout = CallTimeout - 2*time.Second
)

// dialTimeout bounds the wait for a daemon to take the connection.
const dialTimeout = 100 * time.Millisecond

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

// params are the load parameters of a request. The project is the one the
// hook was installed with (--project), else the directory Claude Code was
// started in ($CLAUDE_PROJECT_DIR), else the one found from the payload's
// cwd, which follows the agent's own cd: so once a session's project is
// known it is pinned (see pinned), and the cwd only names the project of
// a session's first call.
func (r Request) params() app.Params {
	env := r.Env
	p := app.Params{Project: r.Project, Env: app.Env{
		WorkDir: r.WorkDir,
		Home:    env["HOME"],
		Getenv:  func(k string) string { return env[k] },
	}}
	if p.Project != "" {
		return p
	}
	for _, dir := range []string{env[ProjectDirVar], gjson.GetBytes(r.Payload, "cwd").String()} {
		if fi, err := os.Stat(dir); dir != "" && err == nil && fi.IsDir() {
			p.WorkDir = dir
			break
		}
	}
	return p
}

// pinned is the project the payload's session is pinned to (see
// hook.ClaudeCode.Pin), root for a payload of no session.
func pinned(ctx context.Context, h *hook.ClaudeCode, payload []byte, root string) (string, error) {
	return h.Pin(ctx, payload, root)
}

// NewRequest is the request of a hook call of payload, made in env.
func NewRequest(payload []byte, project string, env app.Env) Request {
	req := Request{Payload: payload, Project: project, WorkDir: env.WorkDir, Env: map[string]string{}}
	for _, k := range append(slices.Clone(app.EnvVars), ProjectDirVar) {
		if env.Getenv != nil {
			req.Env[k] = env.Getenv(k)
		}
	}
	if req.Env["HOME"] == "" {
		req.Env["HOME"] = env.Home
	}
	return req
}

// SocketPath is the daemon's socket for env: hook.sock in the state
// directory.
func SocketPath(env app.Env) string { return filepath.Join(app.StateDir(env), "hook.sock") }

// Call hands req to the daemon listening on socket. It is false when none
// answered the connection, or the process that did is not this user's
// harness (see trusted), and the call is then the caller's to answer; once
// the request is sent, any failure is the answer (a call must never be
// decided twice).
func Call(socket string, req Request) (hook.Response, bool) {
	if !json.Valid(req.Payload) {
		return hook.Response{}, false
	}
	conn, err := net.DialTimeout("unix", socket, dialTimeout)
	if err != nil {
		return hook.Response{}, false
	}
	defer conn.Close()
	if err := trusted(conn); err != nil {
		return hook.Response{}, false
	}
	conn.SetDeadline(time.Now().Add(CallTimeout))
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return hook.Response{}, false
	}
	var resp hook.Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return Failure(req.Payload, fmt.Errorf("the hook daemon did not answer: %v", err)), true
	}
	return resp, true
}

// Local answers req in this process: load the project of the request
// (see params) or the one its session is pinned to, open the ledger,
// decide.
func Local(ctx context.Context, req Request) hook.Response {
	h, err := app.Load(ctx, req.params())
	if err != nil {
		return Failure(req.Payload, err)
	}
	defer func() { h.Close() }()
	var warnings strings.Builder
	warn := func(err error) { fmt.Fprintf(&warnings, "harness hook: warning: %v\n", err) }
	handler, err := h.Hook(ctx, warn)
	if err != nil {
		return Failure(req.Payload, err)
	}
	root, err := pinned(ctx, handler, req.Payload, h.Root)
	if err != nil {
		return Failure(req.Payload, err)
	}
	if root != h.Root { // the session is another project's: load that one
		h.Close()
		pin := req
		pin.Project = root
		if h, err = app.Load(ctx, pin.params()); err != nil {
			return Failure(req.Payload, err)
		}
		if handler, err = h.Hook(ctx, warn); err != nil {
			return Failure(req.Payload, err)
		}
	}
	resp := handler.Handle(ctx, req.Payload)
	resp.Stderr = warnings.String() + resp.Stderr
	return resp
}

// Unanswered answers a call the harness did not decide, saying why: a
// PreToolUse (or anything else) is refused, a PostToolUse is not charged.
func Unanswered(payload []byte, why string) hook.Response {
	if gjson.GetBytes(payload, "hook_event_name").String() == "PostToolUse" {
		return hook.Response{Stderr: "harness hook: " + why + "; nothing was charged\n"}
	}
	return hook.Response{Stderr: "harness hook: " + why + "; refusing the call\n", Exit: hook.ExitRefused}
}

// Failure answers when the harness itself cannot run (a broken role file,
// an unreachable ledger): a tool call is refused, with the reason.
func Failure(payload []byte, err error) hook.Response {
	msg := fmt.Sprintf("harness hook: the harness cannot decide: %v\n", err)
	if gjson.GetBytes(payload, "hook_event_name").String() == "PostToolUse" {
		return hook.Response{Stderr: msg + "harness hook: nothing was charged\n"}
	}
	return hook.Response{Stderr: msg + "harness hook: refusing the call (fix the error, or run: harness check)\n", Exit: hook.ExitRefused}
}
