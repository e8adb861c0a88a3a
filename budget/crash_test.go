package budget

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the child process of these tests: TestMain
// runs crashChild when crashChildEnv is set.
const (
	crashChildEnv = "HARNESS_BUDGET_CHILD" // "charge", "once", "reserve" or "dms"
	childURLEnv   = "HARNESS_BUDGET_URL"
	childPrefix   = "HARNESS_BUDGET_PREFIX"
	childLimitEnv = "HARNESS_BUDGET_LIMIT"
)

func crashChild() {
	ctx := context.Background()
	if os.Getenv(crashChildEnv) == "dms" {
		probeDMS()
	}
	s, err := Open(ctx, os.Getenv(childURLEnv), Options{Prefix: os.Getenv(childPrefix)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k := Key{Agent: "child", Session: "s"}
	switch os.Getenv(crashChildEnv) {
	case "once":
		// One charge of 7 tokens on session "s" of agent "a" of a period.
		if _, err := s.Charge(ctx, Key{Agent: "a", Session: "s"}, "day:2026-12-03", 7, 7); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "charge":
		// Charge forever, printing each committed total; the parent kills
		// us at some point in the middle of this.
		for {
			c, err := s.Charge(ctx, k, "", 1, 1)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Println(c.Tokens)
		}
	case "reserve":
		limit, _ := strconv.ParseInt(os.Getenv(childLimitEnv), 10, 64)
		var mu sync.Mutex
		granted := 0
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				c, err := s.Get(ctx, k, "")
				for err == nil && c.Shell < limit {
					var ok bool
					if c, ok, err = s.ReserveShell(ctx, k, "", c); ok {
						mu.Lock()
						granted++
						mu.Unlock()
						return
					}
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
			})
		}
		wg.Wait()
		fmt.Println(granted)
	}
	s.Close()
	os.Exit(0)
}

func child(t *testing.T, mode, url, prefix string, limit int64) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+mode, childURLEnv+"="+url, childPrefix+"="+prefix,
		childLimitEnv+"="+strconv.FormatInt(limit, 10))
	cmd.Stderr = os.Stderr
	return cmd
}

// kill -9 in the middle of writes loses no committed count and leaves a
// readable file.
func TestSQLiteKill9(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	cmd := child(t, "charge", "sqlite:"+path, "", 0)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var last int64
	deadline := time.Now().Add(20 * time.Second)
	for lines.Scan() {
		last, _ = strconv.ParseInt(lines.Text(), 10, 64)
		if last >= 2000 || time.Now().After(deadline) {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() { // what it printed before it died was committed too
		last, _ = strconv.ParseInt(lines.Text(), 10, 64)
	}
	cmd.Wait()
	if last < 100 {
		t.Fatalf("the child committed only %d charges", last)
	}

	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check after kill -9: %q, %v", check, err)
	}
	s, err := OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Get(context.Background(), Key{Agent: "child", Session: "s"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Tokens < last || c.Tokens > last+1 {
		t.Errorf("after kill -9 the ledger has %d tokens; the child had committed %d", c.Tokens, last)
	}
	t.Logf("killed after %d committed charges; ledger holds %d", last, c.Tokens)
}

// Two processes racing for the last slots take exactly the free ones, on the
// embedded store and on Redis.
func TestReserveAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct{ name, url, prefix string }{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "ledger.db"), ""},
		{"redis", redisURL(t), fmt.Sprintf("procs:%d:", time.Now().UnixNano())},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(ctx, tt.url, Options{Prefix: tt.prefix})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			k := Key{Agent: "child", Session: "s"}
			const limit, used = 100, 95
			for range used {
				if _, err := s.AddShell(ctx, k, ""); err != nil {
					t.Fatal(err)
				}
			}
			var outs [2]strings.Builder
			var cmds [2]*exec.Cmd
			for i := range cmds {
				cmds[i] = child(t, "reserve", tt.url, tt.prefix, limit)
				cmds[i].Stdout = &outs[i]
				if err := cmds[i].Start(); err != nil {
					t.Fatal(err)
				}
			}
			total := 0
			for i, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("child %d: %v", i, err)
				}
				n, err := strconv.Atoi(strings.TrimSpace(outs[i].String()))
				if err != nil {
					t.Fatalf("child %d printed %q", i, outs[i].String())
				}
				total += n
			}
			c, _ := s.Get(ctx, k, "")
			if total != limit-used || c.Shell != limit {
				t.Errorf("two processes were granted %d slots (want %d); shell count %d (want %d)", total, limit-used, c.Shell, limit)
			}
		})
	}
}

// probeDMS prints whether another process holds SQLite's lock on the
// index of the ledger the child is given (its DMS byte, 128): a process
// that has the ledger open holds it, so that no newcomer takes the index
// for unused and starts it over.
func probeDMS() {
	f, err := os.OpenFile(strings.TrimPrefix(os.Getenv(childURLEnv), "sqlite:")+"-shm", os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) { // the last connection closed, and SQLite removed it
		fmt.Println("free")
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Start: 128, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if lk.Type == syscall.F_UNLCK {
		fmt.Println("free")
	} else {
		fmt.Println("held")
	}
	os.Exit(0)
}
