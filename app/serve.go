package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/gateway"
)

// ServeOptions are the gateway's: where it listens, its upstream, and who
// its stdio client is.
type ServeOptions struct {
	// Command is the upstream given on the command line (after --), and
	// Name its name (default: its command's); without it the upstreams are
	// the configuration's [[upstream]].
	Command []string
	Name    string
	// HTTP serves streamable HTTP on this address instead of stdio; off
	// loopback only with AllowRemote, and then only with bearer tokens.
	HTTP        string
	AllowRemote bool
	// Session and Agent name the stdio client's session and agent
	// (default: derived from the client's name and the working directory).
	Session, Agent string
	// Ledger overrides the ledger's URL.
	Ledger string
	// Stdin and Stdout are the stdio client's stream; Log receives what
	// the gateway reports (and the upstreams' stderr).
	Stdin  io.Reader
	Stdout io.Writer
	Log    io.Writer
}

// Serve runs the MCP gateway until ctx ends (or, over stdio, the client
// goes away): it opens the ledger and logs, starts the upstreams, follows
// edits of roles, policies and configuration, and serves. New sessions
// start in Params.StartRole when it is given.
func (h *Harness) Serve(ctx context.Context, o ServeOptions) error {
	if o.HTTP != "" {
		if err := CheckAddr(o.HTTP, o.AllowRemote, len(h.Config.Tokens)); err != nil {
			return err
		}
	}
	ups, err := h.upstreams(o)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(o.Log, "harness serve: "+format+"\n", args...) }
	g, err := h.Open(ctx, OpenOptions{Ledger: o.Ledger, Warn: func(err error) { logf("warning: %v", err) }})
	if err != nil {
		return err
	}
	defer h.Close()
	gw, err := gateway.New(ctx, gateway.Options{
		Governor: g, Upstreams: ups, Prefix: h.Config.Prefix, Stderr: o.Log, Logf: logf, Version: Version,
	})
	if err != nil {
		return err
	}
	defer gw.Close()

	// Follow edits of roles, policies and configuration, until serving ends.
	wctx, stop := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Go(func() {
		h.Watch(wctx, func() { logf("reloaded roles and policies") },
			func(err error) { logf("reload failed; the last good policy stays in force:\n%v", err) })
	})
	defer watching.Wait()
	defer stop()

	if o.HTTP != "" {
		for _, w := range h.Warnings() {
			logf("warning: %s", w)
		}
		return h.serveHTTP(ctx, gw, o.HTTP, logf)
	}
	id := h.StdioIdentity(o)
	logf("session %s of agent %s (resume it with --session %s)", id.Session, id.Agent, id.Session)
	if err := gw.ServeStdio(ctx, id, o.Stdin, o.Stdout); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// StdioIdentity is who the stdio client is: the agent the operator named
// (--agent, $HARNESS_AGENT), else the configuration's default agent, never
// what the client says of itself; and the session to resume (--session,
// $HARNESS_SESSION), else a new one for this process, so that a second
// process in the same directory is a session of its own, started in the
// role it is given.
func (h *Harness) StdioIdentity(o ServeOptions) gateway.Identity {
	session := firstOf(o.Session, h.Params.getenv("HARNESS_SESSION"))
	if session == "" {
		session = "stdio-" + events.NewID(time.Now())
	}
	return gateway.Identity{
		Agent:     firstOf(o.Agent, h.Params.getenv("HARNESS_AGENT"), h.Config.DefaultAgent),
		Session:   session,
		StartRole: h.Params.StartRole,
	}
}

// upstreams are the command line's upstream, else the configuration's.
func (h *Harness) upstreams(o ServeOptions) ([]gateway.UpstreamConfig, error) {
	if len(o.Command) > 0 {
		name := o.Name
		if name == "" {
			name = regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(filepath.Base(o.Command[0]), "-")
		}
		return []gateway.UpstreamConfig{{Name: name, Command: o.Command[0], Args: o.Command[1:]}}, nil
	}
	var ups []gateway.UpstreamConfig
	for _, u := range h.Config.Upstreams {
		var env []string
		for k, v := range u.Env {
			env = append(env, k+"="+v)
		}
		slices.Sort(env)
		ups = append(ups, gateway.UpstreamConfig{Name: u.Name, Command: u.Command, Args: u.Args, Env: env, URL: u.URL})
	}
	if len(ups) == 0 {
		return nil, errors.New("no upstream: give one after -- (harness serve -- lean-ctx mcp), or [[upstream]] in ~/.lean-ctx/harness.toml")
	}
	return ups, nil
}

func (h *Harness) serveHTTP(ctx context.Context, gw *gateway.Gateway, addr string, logf func(string, ...any)) error {
	var tokens []gateway.Token
	for _, t := range h.Config.Tokens {
		tokens = append(tokens, gateway.Token{Token: t.Token, SHA256: t.SHA256, Agent: t.Agent, Role: t.Role, ClientSessions: t.ClientSessions})
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           gw.HTTPHandler(gateway.HTTPOptions{Tokens: tokens, Anonymous: len(tokens) == 0, StartRole: h.Params.StartRole}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	logf("listening on http://%s/mcp (%d agent tokens)", l.Addr(), len(tokens))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	}
}

// CheckAddr keeps the gateway on loopback unless told otherwise; off
// loopback it needs bearer tokens.
func CheckAddr(addr string, allowRemote bool, tokens int) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %s: want host:port, such as 127.0.0.1:8765", addr)
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil {
		loopback = ip.IsLoopback()
	}
	switch {
	case loopback:
		return nil
	case !allowRemote:
		return fmt.Errorf("--http %s is not a loopback address: add --allow-remote to serve other machines", addr)
	case tokens == 0:
		return fmt.Errorf("--http %s: serving other machines needs bearer tokens ([[gateway.tokens]] in ~/.lean-ctx/harness.toml)", addr)
	}
	return nil
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
