package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/config"
	"github.com/agentharness/harness/gateway"
	"github.com/agentharness/harness/roles"
	"github.com/agentharness/harness/watch"
)

// serve runs the MCP gateway.
func (c *cli) serve(args []string) int {
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	fs, project := c.flags("serve")
	httpAddr := fs.String("http", "", "serve streamable HTTP on `ADDR` (host:port, loopback unless --allow-remote) instead of stdio")
	allowRemote := fs.Bool("allow-remote", false, "allow --http on an address that is not loopback; bearer tokens are then required")
	session := fs.String("session", "", "stdio: the session id (default: $HARNESS_SESSION, else the client's name and the working directory)")
	agent := fs.String("agent", "", "stdio: the agent (default: $HARNESS_AGENT, else the client's name)")
	role := fs.String("role", "", "the role of a new session (default: the agent's configured role, $LEAN_CTX_ROLE, the default)")
	ledger := fs.String("ledger", "", "the counters' store `URL`")
	name := fs.String("name", "", "the name of the upstream given after -- (default: its command's name)")
	if !c.parseNone(fs, args, "the upstream command goes after --") {
		return exitError
	}
	ctx := c.env.ctx
	if path := c.env.getenv("HARNESS_CPUPROFILE"); path != "" { // for developers: where serve spends its time
		f, err := os.Create(path)
		if err != nil {
			return c.fail("serve: %v", err)
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	// A long-running gateway trades memory for speed: decisions allocate
	// about 55 KB each, and collecting less often makes them ~15% faster.
	if c.env.getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	w, g, closeAll, ok := c.open(ctx, *project, *ledger)
	if !ok {
		return exitError
	}
	defer closeAll()
	if *httpAddr != "" {
		if err := checkAddr(*httpAddr, *allowRemote, len(w.cfg.Tokens)); err != nil {
			return c.fail("serve: %v", err)
		}
	}

	var ups []gateway.UpstreamConfig
	switch {
	case len(command) > 0:
		n := *name
		if n == "" {
			n = regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(filepath.Base(command[0]), "-")
		}
		ups = []gateway.UpstreamConfig{{Name: n, Command: command[0], Args: command[1:]}}
	case len(w.cfg.Upstreams) > 0:
		for _, u := range w.cfg.Upstreams {
			var env []string
			for k, v := range u.Env {
				env = append(env, k+"="+v)
			}
			slices.Sort(env)
			ups = append(ups, gateway.UpstreamConfig{Name: u.Name, Command: u.Command, Args: u.Args, Env: env, URL: u.URL})
		}
	default:
		return c.fail("serve: no upstream: give one after -- (harness serve -- lean-ctx mcp), or [[upstream]] in ~/.lean-ctx/harness.toml")
	}

	var set atomic.Pointer[roles.Set]
	set.Store(w.set)
	logf := func(format string, args ...any) { fmt.Fprintf(c.stderr, "harness serve: "+format+"\n", args...) }
	gw, err := gateway.New(ctx, gateway.Options{
		Governor: g, Roles: set.Load, Upstreams: ups, Prefix: w.cfg.Prefix,
		Stderr: c.stderr, Logf: logf, Version: version,
	})
	if err != nil {
		return c.fail("serve: %v", err)
	}
	defer gw.Close()

	// Follow edits of roles, policies and configuration: the engine swaps
	// in the new policy, or keeps the last good one and says why.
	paths := append([]string{w.dirs.Project}, w.dirs.User...)
	for _, d := range c.policyDirs(w.root) {
		paths = append(paths, d.Path)
	}
	user, proj := config.Files(c.env.home, w.root)
	paths = append(paths, user, proj)
	go watch.Run(ctx, watch.Options{
		Paths: slices.DeleteFunc(paths, func(p string) bool { return p == "" }),
		Rebuild: func() error {
			nw, err := c.loadWorld(*project)
			if err != nil {
				return err
			}
			if err := g.Engine().Reload(ctx, compiler.Compile(nw.set, nw.compilerConfig()), nw.custom...); err != nil {
				return err
			}
			set.Store(nw.set)
			return nil
		},
		OnError:  func(err error) { logf("reload failed; the last good policy stays in force:\n%v", err) },
		OnReload: func() { logf("reloaded roles and policies") },
	})

	if *httpAddr != "" {
		return c.serveHTTP(ctx, gw, w, *httpAddr, *role, logf)
	}
	wd := c.env.workDir
	sum := sha256.Sum256([]byte(wd))
	id := gateway.Identity{
		Agent:     firstOf(*agent, c.env.getenv("HARNESS_AGENT")),
		Session:   firstOf(*session, c.env.getenv("HARNESS_SESSION")),
		Derived:   filepath.Base(wd) + "-" + hex.EncodeToString(sum[:4]),
		StartRole: *role,
	}
	if err := gw.ServeStdio(ctx, id, c.env.stdin, c.stdout); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return c.fail("serve: %v", err)
	}
	return exitOK
}

func (c *cli) serveHTTP(ctx context.Context, gw *gateway.Gateway, w *world, addr, role string, logf func(string, ...any)) int {
	var tokens []gateway.Token
	for _, t := range w.cfg.Tokens {
		tokens = append(tokens, gateway.Token{Token: t.Token, SHA256: t.SHA256, Agent: t.Agent, Role: t.Role})
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return c.fail("serve: %v", err)
	}
	srv := &http.Server{
		Handler:           gw.HTTPHandler(gateway.HTTPOptions{Tokens: tokens, Anonymous: len(tokens) == 0, StartRole: role}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	logf("listening on http://%s/mcp (%d agent tokens)", l.Addr(), len(tokens))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return c.fail("serve: %v", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return exitOK
	}
}

// checkAddr keeps the gateway on loopback unless told otherwise; off
// loopback it needs bearer tokens.
func checkAddr(addr string, allowRemote bool, tokens int) error {
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

// compress shows what shell_policy "compress" makes of an output.
func (c *cli) compress(args []string) int {
	fs, _ := c.flags("compress")
	stats := fs.Bool("stats", false, "print the sizes before and after, in bytes and o200k_base tokens, instead of the output")
	if _, err := parse(fs, args); err != nil {
		return exitError
	}
	in, err := io.ReadAll(c.env.stdin)
	if err != nil {
		return c.fail("compress: %v", err)
	}
	out := gateway.Compress(string(in), gateway.DefaultCompress)
	if !*stats {
		fmt.Fprint(c.stdout, out)
		return exitOK
	}
	tk := newTokenizer()
	before, _ := tk.Count(string(in))
	after, _ := tk.Count(out)
	fmt.Fprintf(c.stdout, "bytes  %d → %d (%.0f%% saved)\ntokens %d → %d (%.0f%% saved)\nlines  %d → %d\n",
		len(in), len(out), saved(len(in), len(out)), before, after, saved(int(before), int(after)),
		strings.Count(string(in), "\n"), strings.Count(out, "\n"))
	return exitOK
}

func saved(before, after int) float64 {
	if before == 0 {
		return 0
	}
	return 100 * float64(before-after) / float64(before)
}
