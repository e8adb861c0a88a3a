// Command harness governs the tool calls of AI coding agents: which tools an
// agent may call under its role, and how much of its budget it may spend.
//
// The command tree is cobra's (flags, help, suggestions, shell completion);
// every subcommand maps its flags to the library packages and prints what
// they return. run takes the arguments and writers and returns the exit
// code, so that the whole command is testable without a subprocess.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
