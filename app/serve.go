package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/gateway"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/metrics"
	"github.com/agentharness/harness/ui"
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
	// TLSCert and TLSKey serve HTTPS; required off loopback, where bearer
	// tokens must not travel in clear text.
	TLSCert, TLSKey string
	// Metrics serves /metrics, /healthz and /readyz on a listener of
	// their own at this address (host:port; loopback unless AllowRemote,
	// and then only with a [metrics] token and TLS). Over HTTP they are
	// served beside /mcp in any case.
	Metrics string
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
		if err := CheckAddr(o.HTTP, o.AllowRemote, len(h.Config.Tokens), o.TLSCert != ""); err != nil {
			return err
		}
		if (o.TLSCert == "") != (o.TLSKey == "") {
			return errors.New("--tls-cert and --tls-key go together")
		}
	}
	if o.HTTP == "" && o.Metrics == "" && o.TLSCert != "" {
		return errors.New("--tls-cert and --tls-key are for --http or --metrics")
	}
	if o.Metrics != "" {
		if err := metrics.CheckAddr(o.Metrics, o.AllowRemote, h.metricsToken(), o.TLSCert != ""); err != nil {
			return err
		}
	}
	ups, err := h.upstreams(o)
	if err != nil {
		return err
	}
	// A line a call, control characters escaped: what is logged holds what
	// agents, upstreams and any peer of the HTTP server wrote (a refused
	// request's path, an upstream's error), which must not forge a line
	// of the log or drive the terminal it is read on.
	logf := func(format string, args ...any) {
		fmt.Fprintf(o.Log, "harness serve: %s\n", contract.Printable(fmt.Sprintf(format, args...)))
	}
	// Metrics are kept where they can be read: on --metrics's listener,
	// or at /metrics of the HTTP server. A stdio gateway without
	// --metrics keeps none, rather than pay on every decision, charge and
	// ledger operation for counters no one can ask for.
	var m *metrics.Metrics
	var observer gateway.Observer
	if o.Metrics != "" || o.HTTP != "" {
		m = metrics.New(Version)
		h.Params.Metrics, observer = m, m
		for _, u := range ups {
			m.KnowUpstreams(u.Name)
		}
	}
	id := h.StdioIdentity(o)
	if o.HTTP == "" && m != nil {
		m.KnowAgents(id.Agent)
	}
	bus := events.NewBus() // the sessions' events, which the gateway sends their clients
	sinks, feed := []events.Sink{bus}, ui.NewFeed()
	var changed func(budget.Key)
	if o.HTTP != "" { // the live view (/ui) follows the counters and refusals
		sinks, changed = append(sinks, feed), feed.Changed
	}
	g, err := h.Open(ctx, OpenOptions{Ledger: o.Ledger, Warn: func(err error) { logf("warning: %v", err) }, Sinks: sinks, Changed: changed,
		AlertWait: 5 * time.Second})
	if err != nil {
		return err
	}
	defer h.Close()
	ch := h.Config.Charge
	gw, err := gateway.New(ctx, gateway.Options{
		Governor: g, Upstreams: ups, Prefix: h.Config.Prefix, Stderr: o.Log, Logf: logf, Version: Version, Events: bus, Observer: observer,
		Charging: gateway.ChargeOptions{ImagePixelsPerToken: ch.ImagePixelsPerToken, MaxImageTokens: ch.MaxImageTokens,
			AudioTokensPerKB: ch.AudioTokensPerKB, BlobTokensPerKB: ch.BlobTokensPerKB},
	})
	if err != nil {
		return err
	}
	defer gw.Close()
	if m != nil {
		m.SetSessions(gw.Sessions)
	}

	// Follow edits of roles, policies and configuration, until serving ends.
	wctx, stop := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Go(func() {
		h.Watch(wctx, func() { m.Reloaded(nil); logf("reloaded roles and policies") },
			func(err error) {
				m.Reloaded(err)
				if h.gov.Rules().Broken != "" {
					logf("reload failed through the project's files; until they load, every call but an exempt tool's is refused:")
				} else {
					logf("reload failed; the last good policy stays in force:")
				}
				for _, line := range strings.Split(err.Error(), "\n") {
					logf("  %s", line)
				}
			})
	})
	defer watching.Wait()
	defer stop()

	mo := h.metricsHandler(logf)
	if o.Metrics != "" {
		srv, err := m.Listen(metrics.ListenOptions{Addr: o.Metrics, AllowRemote: o.AllowRemote, TLSCert: o.TLSCert, TLSKey: o.TLSKey, Handler: mo})
		if err != nil {
			return err
		}
		defer srv.Close()
		scheme := "http"
		if o.TLSCert != "" {
			scheme = "https"
		}
		logf("metrics on %s://%s/metrics (and /healthz, /readyz)", scheme, srv.Addr())
	}
	if o.HTTP != "" {
		for _, w := range h.Warnings() {
			logf("warning: %s", w)
		}
		mo.Loopback = isLoopback(o.HTTP)
		if !mo.Loopback && !h.metricsToken() {
			logf("warning: /metrics is refused off loopback until [metrics] token_sha256 (or token) is set in ~/.lean-ctx/harness.toml")
		}
		return h.serveHTTP(ctx, gw, g, feed, o, m.Handler(mo), logf)
	}
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

// metricsToken says whether /metrics has a token of its own ([metrics]).
func (h *Harness) metricsToken() bool {
	return h.Config.MetricsToken != "" || h.Config.MetricsTokenSHA256 != ""
}

// metricsHandler are the options of the metrics' handler: the [metrics]
// token, and ready when the policy is loaded and the ledger answers.
func (h *Harness) metricsHandler(logf func(string, ...any)) metrics.HandlerOptions {
	return metrics.HandlerOptions{Token: h.Config.MetricsToken, TokenSHA256: h.Config.MetricsTokenSHA256, Ready: h.Ready, Logf: logf}
}

func (h *Harness) serveHTTP(ctx context.Context, gw *gateway.Gateway, g *govern.Governor, feed *ui.Feed, o ServeOptions, health http.Handler, logf func(string, ...any)) error {
	var tokens []gateway.Token
	for _, t := range h.Config.Tokens {
		tokens = append(tokens, gateway.Token{Token: t.Token, SHA256: t.SHA256, Agent: t.Agent, Role: t.Role, ClientSessions: t.ClientSessions, Operator: t.Operator})
	}
	l, err := net.Listen("tcp", o.HTTP)
	if err != nil {
		return err
	}
	lim := h.Config.HTTP
	ho := gateway.HTTPOptions{Tokens: tokens, StartRole: h.Params.StartRole, Loopback: isLoopback(o.HTTP),
		MaxBody: lim.MaxBody, BodyTimeout: lim.BodyTimeout, SessionIdle: lim.SessionIdle, MaxSessions: lim.MaxSessions, MaxRequests: lim.MaxRequests, MaxPending: lim.MaxPending,
		Origins: lim.Origins, Hosts: lim.Hosts, Logf: logf, Routes: map[string]http.Handler{}}
	for _, p := range metrics.Paths {
		ho.Routes[p] = health
	}
	if len(tokens) == 0 {
		ho.Anonymous = h.Config.DefaultAgent
	}
	// The live view beside the gateway, behind the same tokens and the
	// same checks of Origin and Host.
	mux := http.NewServeMux()
	mux.Handle("/", gw.HTTPHandler(ho))
	view := ui.New(ui.Options{Governor: g, Feed: feed, Tokens: tokens, Anonymous: ho.Anonymous,
		CheckOrigin: ho.CheckOrigin, Secure: o.TLSCert != "", Live: lim.SessionIdle, Logf: logf})
	mux.Handle("/ui", view)
	mux.Handle("/ui/", view)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(logWriter(logf), "", 0),
	}
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
	}
	logf("listening on %s://%s/mcp (%d tokens; /metrics, /healthz and /readyz beside it); the live view is %s://%s/ui", scheme, l.Addr(), len(tokens), scheme, l.Addr())
	done := make(chan error, 1)
	go func() {
		if o.TLSCert != "" {
			done <- srv.ServeTLS(l, o.TLSCert, o.TLSKey)
		} else {
			done <- srv.Serve(l)
		}
	}()
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

// logWriter is logf as an io.Writer, a line a call.
type logWriter func(string, ...any)

func (l logWriter) Write(p []byte) (int, error) {
	l("http: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckAddr keeps the gateway on loopback unless told otherwise; off
// loopback it needs bearer tokens and TLS (a token must not travel in
// clear text).
func CheckAddr(addr string, allowRemote bool, tokens int, tls bool) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--http %s: want host:port, such as 127.0.0.1:8765", addr)
	}
	switch {
	case isLoopback(addr):
		return nil
	case !allowRemote:
		return fmt.Errorf("--http %s is not a loopback address: add --allow-remote to serve other machines", addr)
	case tokens == 0:
		return fmt.Errorf("--http %s: serving other machines needs bearer tokens ([[gateway.tokens]] in ~/.lean-ctx/harness.toml)", addr)
	case !tls:
		return fmt.Errorf("--http %s: serving other machines needs TLS (--tls-cert and --tls-key): bearer tokens must not travel in clear text", addr)
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
