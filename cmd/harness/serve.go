package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/gateway"
)

func (c *cli) serveCmd() *cobra.Command {
	var f struct {
		sessionFlags
		http, role, name string
		tlsCert, tlsKey  string
		metrics          string
		allowRemote      bool
	}
	cmd := &cobra.Command{
		Use:   "serve [flags] [-- COMMAND [ARG]...]",
		Short: "Run the MCP gateway: every tool call of every upstream governed",
		Long: `Serve runs the harness as an MCP server in front of the agent's MCP servers: the
command after -- (over stdio), or the [[upstream]] servers of the user's
harness.toml. Over stdio each process is a new session; over HTTP (--http, on
loopback unless --allow-remote) sessions are the gateway's, and bearer tokens
([[gateway.tokens]]) name the agents. Edits of roles, policies and harness.toml
are picked up while serving. Prometheus metrics, /healthz and /readyz are served
beside /mcp over HTTP, and on --metrics ADDR (behind [metrics] token if set).`,
		Example: `  harness serve --agent claude-code -- lean-ctx mcp
  harness serve --http 127.0.0.1:8765
  harness serve --metrics 127.0.0.1:9464 -- lean-ctx mcp`,
		Args: func(cmd *cobra.Command, args []string) error {
			if at := cmd.ArgsLenAtDash(); at != 0 && len(args) > 0 {
				return noArgs("the upstream command goes after --")(cmd, args)
			}
			return nil
		},
		RunE: c.runs(func(cmd *cobra.Command, args []string) int {
			var command []string
			if cmd.ArgsLenAtDash() == 0 {
				command = args
			}
			return c.serve(command, f.http, f.metrics, f.allowRemote, f.tlsCert, f.tlsKey, f.session, f.agent, f.role, f.ledger, f.name)
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.http, "http", "", "serve streamable HTTP on `ADDR` (host:port, loopback unless --allow-remote) instead of stdio")
	fs.StringVar(&f.metrics, "metrics", "", "serve /metrics, /healthz and /readyz on `ADDR` (host:port, loopback unless --allow-remote); --http serves them beside /mcp")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow --http or --metrics on an address that is not loopback; tokens and TLS are then required")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "with --http or --metrics: serve HTTPS with the certificate chain in `FILE` (PEM)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "with --http or --metrics: the private key of --tls-cert in `FILE` (PEM)")
	fs.StringVar(&f.session, "session", "", "stdio: the session `ID` (default: $HARNESS_SESSION, else a new one)")
	fs.StringVar(&f.agent, "agent", "", "stdio: the `AGENT` (default: $HARNESS_AGENT, else [gateway] default_agent, else anonymous)")
	fs.StringVar(&f.role, "role", "", "the `ROLE` of a new session (default: the agent's configured role, $LEAN_CTX_ROLE, the default)")
	ledgerFlag(fs, &f.ledger)
	fs.StringVar(&f.name, "name", "", "the `NAME` of the upstream given after -- (default: its command's name)")
	cmd.RegisterFlagCompletionFunc("role", c.completeRoles)
	return cmd
}

// serve runs the MCP gateway.
func (c *cli) serve(command []string, httpAddr, metricsAddr string, allowRemote bool, tlsCert, tlsKey, session, agent, role, ledger, name string) int {
	if path := c.env.getenv("HARNESS_CPUPROFILE"); path != "" { // for developers: where serve spends its time
		f, err := os.Create(path)
		if err != nil {
			return c.fail("serve: %v", err)
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if addr := c.env.getenv("HARNESS_DEBUG_ADDR"); addr != "" { // for developers: goroutines, heap and profiles of a running gateway
		at, stop, err := serveDebug(addr)
		if err != nil {
			return c.fail("serve: HARNESS_DEBUG_ADDR: %v", err)
		}
		defer stop()
		fmt.Fprintf(c.stderr, "harness serve: runtime profiles on http://%s/debug/pprof/ (HARNESS_DEBUG_ADDR)\n", at)
	}
	c.longRunning()
	c.leaveACore()
	p := c.params()
	p.StartRole = role
	h, ok := c.load(p)
	if !ok {
		return exitError
	}
	err := h.Serve(c.env.ctx, app.ServeOptions{
		Command: command, Name: name, HTTP: httpAddr, AllowRemote: allowRemote, TLSCert: tlsCert, TLSKey: tlsKey, Metrics: metricsAddr,
		Session: session, Agent: agent, Ledger: ledger,
		Stdin: c.env.stdin, Stdout: c.stdout, Log: c.stderr,
	})
	if err != nil {
		return c.fail("serve: %v", err)
	}
	return exitOK
}

func (c *cli) compressCmd() *cobra.Command {
	var stats, asJSON bool
	cmd := &cobra.Command{
		Use:   "compress [flags] < OUTPUT",
		Short: `Show what shell_policy "compress" makes of an output`,
		Long: `Compress reads a command's output on stdin and writes what a compress role's shell
tools return instead: ANSI escapes stripped, progress collapsed, runs of the same
line folded, and past 200 lines only the first 60 and the last 140 kept. --stats
prints the sizes before and after instead.`,
		Example: `  go test -v ./... 2>&1 | harness compress --stats`,
		Args:    noArgs("the output comes on stdin"),
		RunE:    c.runs(func(cmd *cobra.Command, _ []string) int { return c.compress(stats, asJSON) }),
	}
	cmd.Flags().BoolVar(&stats, "stats", false, "print the sizes before and after, in bytes, o200k_base tokens and lines, instead of the output")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --stats: print them as JSON")
	return cmd
}

// compress shows what shell_policy "compress" makes of an output.
func (c *cli) compress(stats, asJSON bool) int {
	if asJSON && !stats {
		return c.fail("compress: --json goes with --stats")
	}
	in, err := io.ReadAll(c.env.stdin)
	if err != nil {
		return c.fail("compress: %v", err)
	}
	out := gateway.Compress(string(in), gateway.DefaultCompress)
	if !stats {
		fmt.Fprint(c.stdout, out)
		return exitOK
	}
	tk := newTokenizer()
	before, _ := tk.Count(string(in))
	after, _ := tk.Count(out)
	linesIn, linesOut := strings.Count(string(in), "\n"), strings.Count(out, "\n")
	if asJSON {
		type sizes struct {
			Before int64 `json:"before"`
			After  int64 `json:"after"`
		}
		return c.printJSON(struct {
			Bytes  sizes `json:"bytes"`
			Tokens sizes `json:"tokens"`
			Lines  sizes `json:"lines"`
		}{sizes{int64(len(in)), int64(len(out))}, sizes{before, after}, sizes{int64(linesIn), int64(linesOut)}})
	}
	fmt.Fprintf(c.stdout, "bytes  %d → %d (%.0f%% saved)\ntokens %d → %d (%.0f%% saved)\nlines  %d → %d\n",
		len(in), len(out), saved(len(in), len(out)), before, after, saved(int(before), int(after)), linesIn, linesOut)
	return exitOK
}

func saved(before, after int) float64 {
	if before == 0 {
		return 0
	}
	return 100 * float64(before-after) / float64(before)
}

// leaveACore runs the gateway's Go code on one core fewer than the
// process may use (relayProcs), unless GOMAXPROCS says otherwise, and
// turns off the sampling of allocations for heap profiles, unless
// HARNESS_DEBUG_ADDR serves them. Only in the real command: a test's
// process keeps its own.
//
// A gateway relays: each call is a few short bursts of work between its
// client and its upstream, processes that run on the same machine at the
// same time, and it hands each request and answer from one goroutine to
// another. At each hand-off a Go process with an idle core wakes a thread
// that spins for a while looking for work. On a machine of two cores that
// thread takes the core the upstream or the client was about to run on:
// with one core for its Go code, a small call through the gateway took
// about 50 µs less (see README, Speed), although a large text is then
// counted on one core.
//
// A heap profile takes a stack in every 512 KB allocated: relaying 100
// KB results, that was 16 µs of CPU a call on average (a CPU profile of
// 3,000 calls).
func (c *cli) leaveACore() {
	if !c.env.process {
		return
	}
	if c.env.getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(relayProcs(runtime.GOMAXPROCS(0)))
	}
	if c.env.getenv("HARNESS_DEBUG_ADDR") == "" {
		runtime.MemProfileRate = 0
	}
}

// relayProcs is how many cores a gateway's Go code runs on, when it may
// use n: one fewer, and at least one.
func relayProcs(n int) int { return max(1, n-1) }

// longRunning sets the collector of a process that serves many calls (the
// gateway, the hook daemon): it trades memory for speed, as decisions
// allocate about 55 KB each and collecting less often makes them ~15%
// faster. A GOGC in the environment is left to rule.
func (c *cli) longRunning() {
	if c.env.getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}
