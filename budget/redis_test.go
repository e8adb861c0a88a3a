package budget

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

// testRedis is the URL of a real Redis server for the tests: $HARNESS_TEST_REDIS
// when set, else a private redis-server started on a free loopback port (no
// persistence), shared by the package's tests and stopped by TestMain. With
// neither, tests that need Redis fail: they never skip.
var testRedis struct {
	once sync.Once
	url  string
	err  error
	cmd  *exec.Cmd
}

func redisURL(t testing.TB) string {
	t.Helper()
	testRedis.once.Do(func() {
		if u := os.Getenv("HARNESS_TEST_REDIS"); u != "" {
			testRedis.url = u
			return
		}
		testRedis.url, testRedis.cmd, testRedis.err = startRedis()
	})
	if testRedis.err != nil {
		t.Fatalf("Redis is needed: %v (install redis-server, or set HARNESS_TEST_REDIS=redis://host:port/db)", testRedis.err)
	}
	return testRedis.url
}

func startRedis() (string, *exec.Cmd, error) {
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
	ready := make(chan bool, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.Contains(s.Text(), "Ready to accept connections") {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		return "", nil, fmt.Errorf("redis-server on port %d did not start", port)
	}
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), cmd, nil
}

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	code := m.Run()
	if testRedis.cmd != nil {
		testRedis.cmd.Process.Kill()
		testRedis.cmd.Wait()
	}
	os.Exit(code)
}
