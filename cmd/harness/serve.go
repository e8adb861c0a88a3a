package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/gateway"
)

// serve runs the MCP gateway.
func (c *cli) serve(args []string) int {
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	fs, project := c.flags("serve")
	httpAddr := fs.String("http", "", "serve streamable HTTP on `ADDR` (host:port, loopback unless --allow-remote) instead of stdio")
	allowRemote := fs.Bool("allow-remote", false, "allow --http or --metrics on an address that is not loopback; tokens and TLS are then required")
	tlsCert := fs.String("tls-cert", "", "with --http or --metrics: serve HTTPS with the certificate chain in `FILE` (PEM)")
	tlsKey := fs.String("tls-key", "", "with --http or --metrics: the private key of --tls-cert in `FILE` (PEM)")
	metricsAddr := fs.String("metrics", "", "serve /metrics, /healthz and /readyz on `ADDR` (host:port, loopback unless --allow-remote)")
	session := fs.String("session", "", "stdio: the session id (default: $HARNESS_SESSION, else the client's name and the working directory)")
	agent := fs.String("agent", "", "stdio: the agent (default: $HARNESS_AGENT, else the client's name)")
	role := fs.String("role", "", "the role of a new session (default: the agent's configured role, $LEAN_CTX_ROLE, the default)")
	ledger := fs.String("ledger", "", "the counters' store `URL`")
	name := fs.String("name", "", "the name of the upstream given after -- (default: its command's name)")
	if !c.parseNone(fs, args, "the upstream command goes after --") {
		return exitError
	}
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
	p := c.params(*project)
	p.StartRole = *role
	h, ok := c.load(p)
	if !ok {
		return exitError
	}
	err := h.Serve(c.env.ctx, app.ServeOptions{
		Command: command, Name: *name, HTTP: *httpAddr, AllowRemote: *allowRemote, TLSCert: *tlsCert, TLSKey: *tlsKey, Metrics: *metricsAddr,
		Session: *session, Agent: *agent, Ledger: *ledger,
		Stdin: c.env.stdin, Stdout: c.stdout, Log: c.stderr,
	})
	if err != nil {
		return c.fail("serve: %v", err)
	}
	return exitOK
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
