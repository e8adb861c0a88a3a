package testredis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server (or Sentinel) process of one test: on a free
// loopback port, in a temporary directory of its own, without persistence,
// stopped when the test ends.
type Server struct {
	Port int
	Dir  string
	// Admin is a connection for the test's own commands (short timeouts).
	Admin  *redis.Client
	cmd    *exec.Cmd
	exited chan struct{}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// StartServer starts redis-server with args (a configuration file first,
// if any) and waits until it answers. The port is chosen here, one whose
// cluster bus port (port+10000) is free too; a port taken meanwhile by
// another program is tried again with another.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("Redis is needed: %v (install redis-server)", err)
	}
	dir := t.TempDir()
	var last error
	for range 10 {
		port, err := freePort()
		if err != nil {
			last = err
			continue
		}
		s, err := startAt(bin, dir, port, args)
		if err == nil {
			t.Cleanup(s.stop)
			return s
		}
		last = err
	}
	t.Fatalf("redis-server did not start: %v", last)
	return nil
}

func startAt(bin, dir string, port int, args []string) (*Server, error) {
	logfile := filepath.Join(dir, fmt.Sprintf("redis-%d.log", port))
	argv := append(args, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", logfile)
	cmd := exec.Command(bin, argv...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Port: port, Dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(s.exited) }()
	s.Admin = redis.NewClient(&redis.Options{Addr: s.Addr(), DialTimeout: time.Second, ReadTimeout: 5 * time.Second,
		MaxRetries: -1, PoolSize: 2})
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.Admin.Ping(ctx).Err()
		var pid int
		if err == nil {
			pid, err = processID(ctx, s.Admin)
		}
		cancel()
		if err == nil && pid == cmd.Process.Pid {
			return s, nil
		}
		if err == nil {
			// Another server took the port first (a test beside this one
			// chose it too): this one cannot bind it, and the answer was
			// that server's, which must not be taken for this one's.
			s.stop()
			return nil, fmt.Errorf("port %d: another server (pid %d) answers on it", port, pid)
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(logfile)
			s.Admin.Close()
			return nil, fmt.Errorf("port %d: exited: %s", port, lastLines(string(log), 3))
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("port %d: no answer within 10s: %v", port, err)
		}
		time.Sleep(10 * time.Millisecond) // polling for the server to answer, with a deadline
	}
}

// processID is the process id of the server c talks to.
func processID(ctx context.Context, c *redis.Client) (int, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

// freePort is a random port that is free, and so is its cluster bus port.
func freePort() (int, error) {
	port := 20000 + rand.IntN(30000)
	for _, p := range []int{port, port + 10000} {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return 0, err
		}
		l.Close()
	}
	return port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

func (s *Server) stop() {
	s.cmd.Process.Signal(syscall.SIGCONT) // if paused
	s.cmd.Process.Kill()
	<-s.exited
	s.Admin.Close()
}

// Pause stops the process (SIGSTOP): it holds its connections and answers
// nothing, like a machine that hangs. Resume lets it go on.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// Resume continues a paused process.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// Do runs one command on the server and fails the test on an error.
func (s *Server) Do(t testing.TB, args ...any) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := s.Admin.Do(ctx, args...).Result()
	if err != nil {
		t.Fatalf("%s: %v: %v", s.Addr(), args, err)
	}
	return v
}

// Info is one field of the server's INFO ("" when it has none, or does
// not answer).
func (s *Server) Info(section, field string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, err := s.Admin.Info(ctx, section).Result()
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(v, "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == field {
			return val
		}
	}
	return ""
}

// Eventually polls cond until it holds, failing the test after timeout
// with what and cond's last word on why not.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (%s)", what, timeout, why)
		}
		time.Sleep(20 * time.Millisecond) // polling the servers' state, with a deadline
	}
}

// cli runs redis-cli with args.
func cli(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli is needed: %v", err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
