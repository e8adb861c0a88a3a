package hookclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// Client is one hook process: it reads Claude Code's payload and answers
// it, through the daemon if one listens on Socket, else with Local.
type Client struct {
	// Project is the project root given (--project); "" to find it from
	// the payload's cwd, else from Env.WorkDir.
	Project string
	Env     Env
	// Socket is the daemon's socket (SocketPath); "" not to ask a daemon.
	Socket string
	// Program is the harness binary the daemon must run to be believed;
	// "" for this very program.
	Program string
	// Local answers a call no daemon answered; nil refuses it (see
	// Failure).
	Local func(context.Context, Request) Response
	// Start starts a daemon for the next calls, after Local answered;
	// nil for none.
	Start func() error
	// Deadline bounds the whole call: Deadline when zero, and never more
	// (it may only be shortened).
	Deadline time.Duration
	// Warning goes before the stderr of every answer but Local's: a
	// warning of the hook process's own, which Local gives itself.
	Warning string
}

// TimeLimit is the client's deadline: never past Deadline.
func (c Client) TimeLimit() time.Duration {
	if c.Deadline <= 0 || c.Deadline > Deadline {
		return Deadline
	}
	return c.Deadline
}

// Answer reads the payload from stdin and answers it. It returns by the
// client's deadline whatever it is doing (reading, waiting for the
// daemon, answering with Local): past it the call is refused (a
// PostToolUse is not charged), and ctx, which Local runs under, is
// cancelled.
func (c Client) Answer(ctx context.Context, stdin io.Reader) Response {
	d := c.TimeLimit()
	timer := time.NewTimer(d)
	defer timer.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var payload atomic.Pointer[[]byte]
	answered := make(chan Response, 1)
	go func() { answered <- c.answer(ctx, stdin, &payload) }()
	select {
	case r := <-answered:
		return r
	case <-timer.C:
		var p []byte
		if b := payload.Load(); b != nil {
			p = *b
		}
		return c.warn(Unanswered(p, fmt.Sprintf("the harness did not answer within %v", d)))
	}
}

func (c Client) warn(r Response) Response {
	r.Stderr = c.Warning + r.Stderr
	return r
}

func (c Client) answer(ctx context.Context, stdin io.Reader, payload *atomic.Pointer[[]byte]) Response {
	b, err := io.ReadAll(io.LimitReader(stdin, MaxPayload+1))
	if err != nil {
		return c.warn(Unanswered(b, fmt.Sprintf("reading the hook input: %v", err)))
	}
	if len(b) > MaxPayload {
		// Cut short, it is no JSON: a finished call's (an Edit's response
		// holds the whole file edited) would be refused, and its output,
		// which reached the model, charged nothing.
		b = b[:MaxPayload]
		payload.Store(&b)
		return c.warn(Unanswered(b, fmt.Sprintf("the hook input is past %d MiB", MaxPayload>>20)))
	}
	payload.Store(&b)
	req := NewRequest(b, c.Project, c.Env)
	if c.Socket != "" {
		if r, ok := Call(c.Socket, req, c.Program); ok {
			return c.warn(r)
		}
	}
	if c.Local == nil {
		return c.warn(Failure(b, errors.New("no hook daemon answered, and this hook cannot decide by itself")))
	}
	r := c.Local(ctx, req)
	if c.Start != nil && json.Valid(b) {
		c.Start() // for the next calls
	}
	return r
}

// HarnessName is the harness binary's name.
const HarnessName = "harness"

// FindHarness is the harness binary a hook binary at self runs and
// believes: harness in self's directory, else the first harness on
// pathList (a $PATH) in an absolute directory. A relative directory of
// the PATH ("", ".") is skipped: the hook runs in the project, whose files
// the agent controls. Nothing of the hook's payload or working directory
// chooses it.
func FindHarness(self, pathList string) (string, error) {
	dirs := []string{}
	if self != "" {
		dirs = append(dirs, filepath.Dir(self))
	}
	dirs = append(dirs, filepath.SplitList(pathList)...)
	for _, dir := range dirs {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, HarnessName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("no %s binary beside this hook (%s) nor on the PATH", HarnessName, filepath.Dir(self))
}

// Delegate is a Local that answers with the harness itself: it runs
// program (the harness binary) as `harness hook claude-code args...` in
// this process's environment and working directory, the payload on its
// stdin, and answers what it prints and its exit code, exactly: the full
// hook answers by itself and starts the daemon for the next calls. When
// ctx ends (this process is told to stop), the harness is told so too
// (SIGTERM), and answers as it does then; one that has not answered a
// second later is killed. A harness that cannot run, or is killed,
// answers as a harness that cannot decide (Failure).
func Delegate(program string, args []string) func(context.Context, Request) Response {
	return func(ctx context.Context, req Request) Response {
		cmd := exec.CommandContext(ctx, program, append([]string{"hook", "claude-code"}, args...)...)
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = time.Second
		cmd.Stdin = bytes.NewReader(req.Payload)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit) && exit.Exited():
		default:
			return Failure(req.Payload, fmt.Errorf("running %s: %v", program, err))
		}
		r := Response{Stderr: errb.String(), Exit: cmd.ProcessState.ExitCode()}
		if out.Len() > 0 {
			r.Stdout = out.Bytes()
		}
		return r
	}
}
