// Command relay is the reference a stdio gateway is measured against (see
// BenchmarkGatewayLatency in cmd/harness): it starts the command its
// arguments name and copies bytes both ways between its own stdin and
// stdout and the command's, reading none of them and governing nothing.
// What it adds to a call is about what a process in the middle costs: two
// more pipe hops, each a sleeping process woken.
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: relay COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	go func() {
		io.Copy(in, os.Stdin)
		in.Close()
	}()
	io.Copy(os.Stdout, out)
	if err := cmd.Wait(); err != nil {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "relay:", err)
	os.Exit(1)
}
