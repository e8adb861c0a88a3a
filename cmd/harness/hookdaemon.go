package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/config"
	"github.com/agentharness/harness/hook"
)

// The hook daemon. A hook is a new process for every tool call; starting
// the harness costs about 10 ms, loading and compiling roles and policies
// about as much again, and the o200k_base vocabulary 13 ms more for a
// PostToolUse. So the hook hands its payload to a daemon that keeps all of
// that ready, over a unix socket in the user's state directory (a 0700
// directory; the socket is 0600). The daemon checks, on every call, a
// fingerprint of the role, policy and configuration files it loaded, and
// reloads when any changed. With no daemon, the hook answers by itself,
// the same way, and starts one for the next calls. HARNESS_HOOK_DAEMON=off
// turns the daemon off.

// daemonRequest is one hook call handed to the daemon.
type daemonRequest struct {
	Payload json.RawMessage   `json:"payload"`
	Project string            `json:"project"`
	WorkDir string            `json:"work_dir"`
	Env     map[string]string `json:"env"`
}

// daemonEnv are the variables that change what a hook call means.
var daemonEnv = []string{"HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "LEAN_CTX_ROLE", "HARNESS_AGENT"}

func (c *cli) socketPath() string {
	return filepath.Join(filepath.Dir(budget.DefaultPath(c.env.getenv, c.env.home)), "hook.sock")
}

func (c *cli) daemonOff() bool {
	return !c.env.process || c.env.getenv("HARNESS_HOOK_DAEMON") == "off"
}

// hookViaDaemon hands the call to a running daemon. It is false when none
// answered the connection, and the call is then the caller's to answer;
// once the request is sent, any failure is the answer (a call must never
// be decided twice).
func (c *cli) hookViaDaemon(payload []byte, project string) (hook.Response, bool) {
	if c.daemonOff() || !json.Valid(payload) {
		return hook.Response{}, false
	}
	conn, err := net.DialTimeout("unix", c.socketPath(), 100*time.Millisecond)
	if err != nil {
		return hook.Response{}, false
	}
	defer conn.Close()
	req := daemonRequest{Payload: payload, Project: project, WorkDir: c.env.workDir, Env: map[string]string{}}
	for _, k := range daemonEnv {
		req.Env[k] = c.env.getenv(k)
	}
	if req.Env["HOME"] == "" {
		req.Env["HOME"] = c.env.home
	}
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return hook.Response{}, false
	}
	var resp hook.Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return hookFailure(payload, fmt.Errorf("the hook daemon did not answer: %v", err)), true
	}
	return resp, true
}

// startDaemon starts a daemon in the background for the next calls.
func (c *cli) startDaemon() {
	if c.daemonOff() {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	cmd := exec.Command(exe, "hook", "daemon")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cmd.Start() == nil {
		cmd.Process.Release()
	}
}

// hookDaemon serves hook calls on the socket until idle.
func (c *cli) hookDaemon(args []string) int {
	fs, _ := c.flags("hook daemon")
	idle := fs.Duration("idle", 15*time.Minute, "exit after this long without a call")
	if _, err := parse(fs, args); err != nil {
		return exitError
	}
	sock := c.socketPath()
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		return c.fail("hook daemon: %v", err)
	}
	// One daemon at a time: whoever holds the lock owns the socket.
	lock, err := os.OpenFile(sock+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return c.fail("hook daemon: %v", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return exitOK // another daemon is running
	}
	lock.Truncate(0)
	fmt.Fprintf(lock, "%d\n", os.Getpid()) // who serves the socket
	os.Remove(sock)                        // a stale socket of a daemon that died
	l, err := net.Listen("unix", sock)
	if err != nil {
		return c.fail("hook daemon: %v", err)
	}
	os.Chmod(sock, 0o600)
	defer os.Remove(sock)
	d := &daemon{c: c, worlds: map[string]*daemonWorld{}, calls: make(chan struct{}, 1)}
	defer d.close()
	go func() {
		last := time.Now()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-c.env.ctx.Done():
				l.Close()
				return
			case <-d.calls:
				last = time.Now()
			case <-tick.C:
				// Idle, or the socket is gone (its directory removed, or
				// another daemon took over): stop.
				if _, err := os.Stat(sock); err != nil || time.Since(last) > *idle {
					l.Close()
					return
				}
			}
		}
	}()
	for {
		conn, err := l.Accept()
		if err != nil {
			return exitOK
		}
		select {
		case d.calls <- struct{}{}:
		default:
		}
		go d.serve(conn)
	}
}

type daemon struct {
	c      *cli
	mu     sync.Mutex
	worlds map[string]*daemonWorld // by project and environment
	calls  chan struct{}
}

// daemonWorld is a loaded project: its governor, and the fingerprint of
// the files it was loaded from.
type daemonWorld struct {
	mu          sync.Mutex
	fingerprint string
	gen         *generation
}

// generation is one load of a project: its handler, and the calls still
// using it, so that a reload closes it only when they are done.
type generation struct {
	handler  *hook.ClaudeCode
	close    func()
	inflight sync.WaitGroup
}

// retire closes g once its calls are done.
func (g *generation) retire() {
	go func() {
		g.inflight.Wait()
		g.close()
	}()
}

func (d *daemon) serve(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	var req daemonRequest
	if err := json.NewDecoder(conn).Decode(&req); err != nil {
		return
	}
	json.NewEncoder(conn).Encode(d.answer(req))
}

func (d *daemon) answer(req daemonRequest) hook.Response {
	env := d.c.env
	env.process = false
	env.getenv = func(k string) string { return req.Env[k] }
	env.home = req.Env["HOME"]
	env.workDir = req.WorkDir
	if dir := gjson.GetBytes(req.Payload, "cwd").String(); dir != "" && req.Project == "" {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			env.workDir = dir
		}
	}
	c := &cli{stdout: io.Discard, stderr: io.Discard, env: env}
	root, _, err := c.locate(req.Project)
	if err != nil {
		return hookFailure(req.Payload, err)
	}
	key := root + "\x00" + fmt.Sprint(req.Env)
	d.mu.Lock()
	w, ok := d.worlds[key]
	if !ok {
		w = &daemonWorld{}
		d.worlds[key] = w
	}
	d.mu.Unlock()

	w.mu.Lock()
	fp := c.fingerprint(root)
	if w.gen == nil || w.fingerprint != fp {
		if w.gen != nil {
			w.gen.retire()
			w.gen = nil
		}
		h, closeAll, err := c.hookHandler(env.ctx, req.Project)
		if err != nil {
			w.mu.Unlock()
			return hookFailure(req.Payload, err)
		}
		w.gen, w.fingerprint = &generation{handler: h, close: closeAll}, fp
	}
	gen := w.gen
	gen.inflight.Add(1)
	w.mu.Unlock()
	defer gen.inflight.Done()
	return gen.handler.Handle(context.Background(), req.Payload)
}

func (d *daemon) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.worlds {
		if w.gen != nil {
			w.gen.inflight.Wait()
			w.gen.close()
		}
	}
}

// fingerprint summarises the files a hook call depends on: role and
// policy directories and configuration files, by name, size and time.
func (c *cli) fingerprint(root string) string {
	h := sha256.New()
	_, dirs, _ := c.locate(root)
	paths := append([]string{dirs.Project}, dirs.User...)
	for _, d := range c.policyDirs(root) {
		paths = append(paths, d.Path)
	}
	user, proj := config.Files(c.env.home, root)
	for _, p := range append(paths, user, proj) {
		if p == "" {
			continue
		}
		entries, err := os.ReadDir(p)
		if errors.Is(err, fs.ErrNotExist) || (err != nil && !isDir(p)) {
			if fi, err := os.Stat(p); err == nil {
				fmt.Fprintf(h, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
			} else {
				fmt.Fprintf(h, "%s -\n", p)
			}
			continue
		}
		for _, e := range entries {
			if fi, err := e.Info(); err == nil {
				fmt.Fprintf(h, "%s/%s %d %d\n", p, e.Name(), fi.Size(), fi.ModTime().UnixNano())
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// hookHandler loads a project and opens its governor, for the daemon.
func (c *cli) hookHandler(ctx context.Context, project string) (*hook.ClaudeCode, func(), error) {
	w, err := c.loadWorld(project)
	if err != nil {
		return nil, nil, err
	}
	g, closeAll, ok := c.governor(ctx, w, "")
	if !ok {
		return nil, nil, errors.New("cannot open the ledger or the logs")
	}
	tools := maps.Clone(hook.DefaultTools)
	maps.Copy(tools, w.cfg.HookTools)
	return &hook.ClaudeCode{Gov: g, Opts: hook.Options{Tools: tools, Allow: w.cfg.HookAllow}}, closeAll, nil
}
