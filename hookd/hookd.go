// Package hookd answers Claude Code's hook calls fast. A hook is a new
// process for every tool call; starting the harness costs about 10 ms,
// loading and compiling roles and policies about as much again, and the
// o200k_base vocabulary 13 ms more for a PostToolUse. So the hook process
// hands its payload to a daemon that keeps all of that ready, over a unix
// socket in the user's state directory (a 0700 directory; the socket is
// 0600). The daemon checks, on every call, a fingerprint of the files the
// load read (app.Location.Sources) and loads again when one changed. With
// no daemon, the hook process answers by itself the same way (Local) and
// starts one for the next calls. The hook process's side of the socket is
// hookclient's, which the small hook binary (cmd/harness-hook) uses
// alone: it hands the payload to the daemon without loading the harness,
// and runs the harness itself when no daemon answers.
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
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/hookclient"
)

// The deadlines of a hook call (see hookclient): the hook process's
// whole call, its wait for the daemon, and the daemon's work on one call.
const (
	Deadline      = hookclient.Deadline
	CallTimeout   = hookclient.CallTimeout
	DecideTimeout = hookclient.DecideTimeout
)

// Request is one hook call handed to the daemon (see hookclient.Request).
type Request = hookclient.Request

// ProjectDirVar is the variable Claude Code sets for its hooks: the
// directory it was started in, which the agent's cd does not move.
const ProjectDirVar = hookclient.ProjectDirVar

// params are the load parameters of a request. The project is the one the
// hook was installed with (--project), else the directory Claude Code was
// started in ($CLAUDE_PROJECT_DIR), else the one found from the payload's
// cwd, which follows the agent's own cd: so once a session's project is
// known it is pinned (see pinned), and the cwd only names the project of
// a session's first call.
// executable is the binary the daemon (or the hook answering in its
// process) runs: with the small hook binary beside it, a file of the
// harness's (app.Binaries).
var executable = sync.OnceValue(func() string {
	exe, _ := os.Executable()
	return exe
})

func params(r Request) app.Params {
	env := r.Env
	p := app.Params{Project: r.Project, Env: app.Env{
		WorkDir: r.WorkDir,
		Home:    env["HOME"],
		Getenv:  func(k string) string { return env[k] },
	}, Exe: executable()}
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
	return hookclient.NewRequest(payload, project, hookclient.Env(env))
}

// SocketPath is the daemon's socket for env: hook.sock in the state
// directory (hookclient.SocketPath).
func SocketPath(env app.Env) string { return hookclient.SocketPath(hookclient.Env(env)) }

// Call hands req to the daemon listening on socket, which must run this
// very program (see hookclient.Call).
func Call(socket string, req Request) (hook.Response, bool) { return hookclient.Call(socket, req, "") }

// Local answers req in this process: load the project of the request
// (see params) or the one its session is pinned to, open the ledger,
// decide.
func Local(ctx context.Context, req Request) hook.Response {
	h, err := app.Load(ctx, params(req))
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
		if h, err = app.Load(ctx, params(pin)); err != nil {
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

// Unanswered answers a call the harness did not decide, saying why (see
// hookclient.Unanswered).
func Unanswered(payload []byte, why string) hook.Response { return hookclient.Unanswered(payload, why) }

// Failure answers when the harness itself cannot run (see
// hookclient.Failure).
func Failure(payload []byte, err error) hook.Response { return hookclient.Failure(payload, err) }
