// Package testredis gives tests a real Redis server: $HARNESS_TEST_REDIS
// when set, else a private redis-server started on a free loopback port
// without persistence, shared by one test binary's tests. Without either,
// a test that asks for one fails: it never skips. For tests of replication
// and failover it starts servers of a test's own ([StartServer]): a Redis
// Cluster ([StartCluster]) and a master with a replica and Sentinels
// ([StartSentinel]).
package testredis

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

var server struct {
	once sync.Once
	url  string
	err  error
	cmd  *exec.Cmd
}

// URL returns the server's redis:// URL, starting the server on first use.
func URL(t testing.TB) string {
	t.Helper()
	server.once.Do(func() {
		if u := os.Getenv("HARNESS_TEST_REDIS"); u != "" {
			server.url = u
			return
		}
		server.url, server.cmd, server.err = start()
	})
	if server.err != nil {
		t.Fatalf("Redis is needed: %v (install redis-server, or set HARNESS_TEST_REDIS=redis://host:port/db)", server.err)
	}
	return server.url
}

// Stop stops the private server, if one was started. Call it from TestMain
// after m.Run.
func Stop() {
	if server.cmd != nil {
		server.cmd.Process.Kill()
		server.cmd.Wait()
	}
}

func start() (string, *exec.Cmd, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", fmt.Sprint(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	ready := make(chan struct{})
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.Contains(s.Text(), "Ready to accept connections") {
				close(ready)
				break
			}
		}
		for s.Scan() { // keep draining, so the server never blocks on its log
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return "", nil, fmt.Errorf("redis-server on port %d did not start", port)
	}
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), cmd, nil
}
