package hookd

import (
	"context"
	"io"
	"time"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/hookclient"
)

// MaxPayload bounds a hook payload read from stdin.
const MaxPayload = hookclient.MaxPayload

// Client is one hook process of the harness itself: it reads Claude
// Code's payload and answers it, through the daemon if one listens on
// Socket, else by itself (Local).
type Client struct {
	// Project is the project root given (--project); "" to find it from
	// the payload's cwd, else from Env.WorkDir.
	Project string
	Env     app.Env
	// Socket is the daemon's socket (SocketPath); "" to answer in this
	// process only.
	Socket string
	// Start starts a daemon for the next calls, after this process
	// answered by itself; nil for none.
	Start func() error
	// Deadline bounds the whole call: Deadline when zero, and never more
	// (it may only be shortened).
	Deadline time.Duration
}

func (c Client) client() hookclient.Client {
	return hookclient.Client{Project: c.Project, Env: hookclient.Env(c.Env), Socket: c.Socket, Local: Local, Start: c.Start, Deadline: c.Deadline}
}

// deadline is the client's deadline: never past Deadline.
func (c Client) deadline() time.Duration { return c.client().TimeLimit() }

// Answer reads the payload from stdin and answers it. It returns by the
// client's deadline whatever it is doing (reading, waiting for the
// daemon, loading, evaluating): past it the call is refused (a
// PostToolUse is not charged), and ctx, which the work in this process
// runs under, is cancelled.
func (c Client) Answer(ctx context.Context, stdin io.Reader) hook.Response {
	return c.client().Answer(ctx, stdin)
}
