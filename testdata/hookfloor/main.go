// Command hookfloor is the floor a hook process is measured against (see
// BenchmarkHookStart in cmd/harness): a trivial Go binary that reads its
// stdin, dials the unix socket named by its argument, sends what it read,
// and prints the answer.
package main

import (
	"io"
	"net"
	"os"
)

func main() {
	payload, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(1)
	}
	conn, err := net.Dial("unix", os.Args[1])
	if err != nil {
		os.Exit(1)
	}
	defer conn.Close()
	conn.Write(append(payload, '\n'))
	conn.(*net.UnixConn).CloseWrite()
	io.Copy(os.Stdout, conn)
}
