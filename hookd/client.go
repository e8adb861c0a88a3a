package hookd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/hook"
)

// MaxPayload bounds a hook payload read from stdin.
const MaxPayload = 64 << 20

// Client is one hook process: it reads Claude Code's payload and answers
// it, through the daemon if one listens on Socket, else by itself.
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

// deadline is the client's deadline: never past Deadline.
func (c Client) deadline() time.Duration {
	if c.Deadline <= 0 || c.Deadline > Deadline {
		return Deadline
	}
	return c.Deadline
}

// Answer reads the payload from stdin and answers it. It returns by the
// client's deadline whatever it is doing (reading, waiting for the
// daemon, loading, evaluating): past it the call is refused (a
// PostToolUse is not charged), and ctx, which the work in this process
// runs under, is cancelled.
func (c Client) Answer(ctx context.Context, stdin io.Reader) hook.Response {
	d := c.deadline()
	timer := time.NewTimer(d)
	defer timer.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var payload atomic.Pointer[[]byte]
	answered := make(chan hook.Response, 1)
	go func() { answered <- c.answer(ctx, stdin, &payload) }()
	select {
	case r := <-answered:
		return r
	case <-timer.C:
		var p []byte
		if b := payload.Load(); b != nil {
			p = *b
		}
		return Unanswered(p, fmt.Sprintf("the harness did not answer within %v", d))
	}
}

func (c Client) answer(ctx context.Context, stdin io.Reader, payload *atomic.Pointer[[]byte]) hook.Response {
	b, err := io.ReadAll(io.LimitReader(stdin, MaxPayload))
	if err != nil {
		return hook.Response{Stderr: fmt.Sprintf("harness hook: reading the hook input: %v; refusing the call\n", err), Exit: hook.ExitRefused}
	}
	payload.Store(&b)
	req := NewRequest(b, c.Project, c.Env)
	if c.Socket != "" {
		if r, ok := Call(c.Socket, req); ok {
			return r
		}
	}
	r := Local(ctx, req)
	if c.Start != nil && json.Valid(b) {
		c.Start() // for the next calls
	}
	return r
}
