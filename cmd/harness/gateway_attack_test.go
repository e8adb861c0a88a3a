package main

// Attacks on harness serve by a hostile agent, through the shipped
// binaries: the ones the gateway's own tests (gateway/attack_test.go) find
// in the package, as an agent meets them in front of the real command.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// An embedded resource past the budget reaches the agent cut, in the
// resource itself, where its client reads the text.
func TestGatewayAttackEmbeddedResourcePastTheBudget(t *testing.T) {
	t.Parallel()
	c := stdioClient(t, t.TempDir(), gatewayProject(t), "--role", "small", "--session", "embedded")
	res := call(t, c, "ctx_read", map[string]any{"bytes": 40000, "resource": true})
	var got int
	for _, content := range res.Content {
		if r, ok := content.(mcp.EmbeddedResource); ok {
			if text, ok := r.Resource.(mcp.TextResourceContents); ok {
				got += len(text.Text)
			}
		}
	}
	// 1000 tokens of that text are about 4,000 bytes.
	if got == 0 || got > 8000 {
		t.Errorf("%d bytes of a resource of 40000 reached an agent with a budget of 1000 tokens", got)
	}
}

// rawServe starts harness serve over stdio with pipes the test writes
// and reads raw JSON-RPC on.
func rawServe(t *testing.T, args ...string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout *bufio.Reader) {
	t.Helper()
	harnessBin, upstreamBin := buildBinaries(t)
	cmd = exec.Command(harnessBin, append(append([]string{"serve", "--project", t.TempDir()}, args...), "--", upstreamBin)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stderr = testWriter{t}
	stdin, _ = cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stdin, bufio.NewReader(out)
}

// until reads messages until one of method (a request of the gateway's)
// or of id (a response) comes.
func until(t *testing.T, r *bufio.Reader, method string, id int) map[string]any {
	t.Helper()
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("waiting for %s %d: %v", method, id, err)
		}
		var m map[string]any
		json.Unmarshal(line, &m)
		if method != "" && m["method"] == method || id != 0 && m["id"] == float64(id) && m["method"] == nil {
			return m
		}
	}
}

// An agent that hangs up while an upstream waits for its answer to a
// sampling request leaves no gateway (nor upstream) running.
func TestGatewayAttackHangUpDuringSampling(t *testing.T) {
	t.Parallel()
	cmd, stdin, stdout := rawServe(t, "--session", "hangup")
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	until(t, stdout, "", 1)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"hello"}}}`)
	until(t, stdout, "sampling/createMessage", 0)
	stdin.Close()
	go io.Copy(io.Discard, stdout)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("harness serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("harness serve still runs, 20 s after its client hung up")
	}
}

// A body that never ends is answered 408 within the body's deadline, and
// its connection closed.
func TestGatewayAttackBodyThatNeverEnds(t *testing.T) {
	t.Parallel()
	harnessBin, upstreamBin := buildBinaries(t)
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[gateway]\nbody_timeout = \"1s\"\n")
	addr := freeAddr(t)
	srv := exec.Command(harnessBin, "serve", "--http", addr, "--project", t.TempDir(), "--", upstreamBin)
	srv.Env = append(os.Environ(), "HOME="+home)
	srv.Stderr = testWriter{t}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitListening(t, "http://"+addr+"/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprint(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	r := bufio.NewReader(conn)
	if status, err := r.ReadString('\n'); err != nil || !strings.Contains(status, " 408 ") {
		t.Fatalf("the answer: %q %v", status, err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Errorf("the connection was not closed after the answer: %v", err)
	}
}
