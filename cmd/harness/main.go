// Command harness governs the tool calls of AI coding agents: which tools an
// agent may call under its role, and how much of its budget it may spend.
//
// Every subcommand is wired in run, which takes its arguments and writers
// and returns the exit code, so that the whole command is testable without
// a subprocess.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
