package budget

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// A SQLite ledger answers a read without a statement only while nothing
// was committed since it last read or wrote the counters; whatever anyone
// else commits (another store of this process, another process, a program
// that knows nothing of the harness) is read at the next read.
func TestLedgerReadsWhatOthersCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const day = "day:2026-12-03" // the "once" child's period
	k := Key{Agent: "a", Session: "s"}
	for _, tc := range []struct {
		name   string
		commit func(t *testing.T, path string, other *SQLite)
		want   Counters
	}{
		{"a charge by another store of this process", func(t *testing.T, _ string, other *SQLite) {
			if _, err := other.Charge(ctx, k, day, 5, 5); err != nil {
				t.Fatal(err)
			}
		}, Counters{Tokens: 15, CostMicros: 15, AgentUsage: Usage{Tokens: 15, CostMicros: 15}}},
		{"a charge by another process", func(t *testing.T, path string, _ *SQLite) {
			if out, err := child(t, "once", "sqlite:"+path, "", 0).Output(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
		}, Counters{Tokens: 17, CostMicros: 17, AgentUsage: Usage{Tokens: 17, CostMicros: 17}}},
		{"a change by a program that is not the harness", func(t *testing.T, path string, _ *SQLite) {
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE sessions SET tokens = 99, role = 'admin'`); err != nil {
				t.Fatal(err)
			}
		}, Counters{Tokens: 99, CostMicros: 10, Role: "admin", AgentUsage: Usage{Tokens: 10, CostMicros: 10}}},
		{"a reset by another store", func(t *testing.T, _ string, other *SQLite) {
			if err := other.Reset(ctx, k); err != nil {
				t.Fatal(err)
			}
		}, Counters{AgentUsage: Usage{Tokens: 10, CostMicros: 10}}},
		{"a role set by another store", func(t *testing.T, _ string, other *SQLite) {
			if _, err := other.SetRole(ctx, k, "reviewer"); err != nil {
				t.Fatal(err)
			}
		}, Counters{Tokens: 10, CostMicros: 10, Role: "reviewer", AgentUsage: Usage{Tokens: 10, CostMicros: 10}}},
		{"the agent's period reset by another store", func(t *testing.T, _ string, other *SQLite) {
			if err := other.ResetAgent(ctx, "a", day); err != nil {
				t.Fatal(err)
			}
		}, Counters{Tokens: 10, CostMicros: 10}},
		{"a charge of another session of the agent", func(t *testing.T, _ string, other *SQLite) {
			if _, err := other.Charge(ctx, Key{Agent: "a", Session: "t"}, day, 3, 3); err != nil {
				t.Fatal(err)
			}
		}, Counters{Tokens: 10, CostMicros: 10, AgentUsage: Usage{Tokens: 13, CostMicros: 13}}},
		{"a shell slot taken by another store", func(t *testing.T, _ string, other *SQLite) {
			if _, err := other.AddShell(ctx, k, day); err != nil {
				t.Fatal(err)
			}
		}, Counters{Tokens: 10, Shell: 1, CostMicros: 10, AgentUsage: Usage{Tokens: 10, Shell: 1, CostMicros: 10}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "ledger.db")
			s, other := openSQLite(t, path), openSQLite(t, path)
			if s.wal == nil {
				t.Fatal("the ledger's WAL-index is not read")
			}
			if _, err := s.Get(ctx, k, day); err != nil { // as a decision reads before its call's charge
				t.Fatal(err)
			}
			c, err := s.Charge(ctx, k, day, 10, 10)
			if err != nil {
				t.Fatal(err)
			}
			reads := s.reads.Load()
			for range 3 {
				if got, err := s.Get(ctx, k, day); err != nil || got != c {
					t.Fatalf("read after its own charge: %+v %v, want %+v", got, err, c)
				}
			}
			if n := s.reads.Load() - reads; n != 0 {
				t.Errorf("reads after its own charge ran %d statements, want none", n)
			}
			tc.commit(t, path, other)
			got, err := s.Get(ctx, k, day)
			if err != nil || got != tc.want {
				t.Errorf("read after the commit: %+v %v, want %+v", got, err, tc.want)
			}
			if n := s.reads.Load() - reads; n != 1 {
				t.Errorf("the read after the commit ran %d statements, want 1", n)
			}
			if again, _ := s.Get(ctx, k, day); again != got || s.reads.Load()-reads != 1 {
				t.Errorf("a second read: %+v after %d statements, want %+v after 1", again, s.reads.Load()-reads, got)
			}
		})
	}
}

// A read that is its own store's second, with nothing committed between,
// runs no statement; a charge made against stale counters, refused, still
// returns the current ones.
func TestLedgerReadsOnceWhileNothingChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, other := openSQLite(t, path), openSQLite(t, path)
	k := Key{Session: "s"}
	for i, want := range []int64{0, 0} {
		if c, err := s.Get(ctx, k, ""); err != nil || c.Tokens != want || s.reads.Load() != 1 {
			t.Fatalf("read %d: %+v %v after %d statements", i, c, err, s.reads.Load())
		}
	}
	if _, err := other.Charge(ctx, k, "", 4, 0); err != nil {
		t.Fatal(err)
	}
	c, ok, err := s.ChargeIf(ctx, k, "", Counters{}, 1, 0)
	if err != nil || ok || c.Tokens != 4 {
		t.Fatalf("a charge against stale counters: %+v ok=%v %v", c, ok, err)
	}
	if c, ok, err = s.ChargeIf(ctx, k, "", c, 1, 0); err != nil || !ok || c.Tokens != 5 {
		t.Fatalf("a charge against the current counters: %+v ok=%v %v", c, ok, err)
	}
	reads := s.reads.Load()
	if got, err := s.Get(ctx, k, ""); err != nil || got != c || s.reads.Load() != reads {
		t.Errorf("read after the charge: %+v %v after %d more statements, want %+v after none", got, err, s.reads.Load()-reads, c)
	}
}

// While another store charges, every read returns at least what that store
// had committed when the read began.
func TestLedgerReadsAreNeverStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, other := openSQLite(t, path), openSQLite(t, path)
	theirs, ours := Key{Session: "theirs"}, Key{Session: "ours"}
	var committed atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 300 {
			c, err := other.Charge(ctx, theirs, "", 1, 0)
			if err != nil {
				t.Error(err)
				return
			}
			committed.Store(c.Tokens)
		}
	})
	for range 2 {
		wg.Go(func() {
			for range 300 {
				if _, err := s.Charge(ctx, ours, "", 1, 0); err != nil {
					t.Error(err)
					return
				}
				least := committed.Load()
				c, err := s.Get(ctx, theirs, "")
				if err != nil || c.Tokens < least {
					t.Errorf("read %+v %v after %d tokens were committed", c, err, least)
					return
				}
			}
		})
	}
	wg.Wait()
	if c, _ := s.Get(ctx, ours, ""); c.Tokens != 600 {
		t.Errorf("our charges: %d tokens, want 600", c.Tokens)
	}
}

// A ledger named through a symbolic link has its WAL-index next to the
// file the link points to: a file named after the link, which SQLite
// never writes (say, one an agent put there), is not the one read.
func TestLedgerThroughALinkReadsTheRealIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.db"), filepath.Join(dir, "link.db")
	realLedger := openSQLite(t, real)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	shm, err := os.ReadFile(real + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link+"-shm", shm, 0o600); err != nil { // a copy that never changes
		t.Fatal(err)
	}
	s := openSQLite(t, link)
	k := Key{Session: "s"}
	if _, err := s.Charge(ctx, k, "", 1, 0); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Get(ctx, k, ""); err != nil || c.Tokens != 1 {
		t.Fatalf("read through the link: %+v %v, want 1 token", c, err)
	}
	if _, err := realLedger.Charge(ctx, k, "", 1, 0); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Get(ctx, k, ""); err != nil || c.Tokens != 2 {
		t.Errorf("read through the link: %+v %v, want 2 tokens", c, err)
	}
}

func TestCommittedOnce(t *testing.T) {
	at := func(change, frames, salt uint32) mark {
		var m mark
		m[markChange], m[markFrames], m[markSalt], m[markSalt+1] = change, frames, salt, salt
		return m
	}
	for _, tc := range []struct {
		name          string
		before, after mark
		want          bool
	}{
		{"one commit", at(7, 10, 1), at(8, 11, 1), true},
		{"the counter wraps", at(^uint32(0), 10, 1), at(0, 11, 1), true},
		{"nothing committed", at(7, 10, 1), at(7, 10, 1), false},
		{"two commits", at(7, 10, 1), at(9, 12, 1), false},
		{"the WAL started over", at(7, 10, 1), at(8, 1, 2), false},
		{"the salt changed", at(7, 10, 1), at(8, 11, 2), false},
		{"frames went back", at(7, 10, 1), at(8, 9, 1), false},
	} {
		if got := committedOnce(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: committedOnce = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A commit under way (copies that differ) or an index not yet initialised
// reads as unknown, and a file cut short under the mapping reads as
// unknown rather than crashing the process.
func TestWALMarkReadsTheHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		first, second uint32
		init          byte
		cut           bool
		ok            bool
	}{
		{"a header", 5, 5, 1, false, true},
		{"a commit under way", 10, 11, 1, false, false},
		{"not initialised", 10, 10, 0, false, false},
		{"a file cut short", 5, 5, 1, true, false},
	} {
		name := filepath.Join(t.TempDir(), "ledger.db-shm")
		b := make([]byte, 4096)
		for i, change := range []uint32{tc.first, tc.second} {
			binary.NativeEndian.PutUint32(b[i*walHdrSize+4*markChange:], change)
			b[i*walHdrSize+4*markInit] = tc.init
		}
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if tc.cut {
			if err := os.Truncate(name, 0); err != nil {
				t.Fatal(err)
			}
		}
		m, ok := header(mem)
		syscall.Munmap(mem)
		if ok != tc.ok || ok && m[markChange] != tc.first {
			t.Errorf("%s: read %v, %v; want known %v", tc.name, m[markChange], ok, tc.ok)
		}
	}
}

// The index a ledger reads stays the one SQLite uses when the store's
// connection closes: were it the last, SQLite would delete the index and
// the next connection would make another, which commits would then change
// instead.
func TestLedgerIndexOutlivesItsConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const day = "day:2026-12-03" // the "once" child's period
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := openSQLite(t, path)
	k := Key{Agent: "a", Session: "s"}
	if _, err := s.Charge(ctx, k, day, 1, 1); err != nil {
		t.Fatal(err)
	}
	s.db.SetMaxIdleConns(0) // closes the store's connection
	s.db.SetMaxIdleConns(2)
	if out, err := child(t, "once", "sqlite:"+path, "", 0).Output(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if c, err := s.Get(ctx, k, day); err != nil || c.Tokens != 8 {
		t.Errorf("read after the other process's charge: %+v %v, want 8 tokens", c, err)
	}
}

// A store keeps SQLite's hold on the ledger's index: another process
// that opens the ledger finds it in use, and does not start it over under
// the store (which would leave the store reading an index nobody writes,
// and its statements failing with I/O errors).
func TestLedgerKeepsTheIndexInUse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	openSQLite(t, path)
	out, err := child(t, "dms", "sqlite:"+path, "", 0).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != "held\n" {
		t.Errorf("the index's lock, seen from another process: %q, want held", got)
	}
}

// Reads that run while the store closes return counters or an error; they
// do not read an index the store has let go of.
func TestLedgerClosesUnderReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Session: "s"}
	if _, err := s.Charge(ctx, k, "", 1, 0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 500 {
				if c, err := s.Get(ctx, k, ""); err == nil && c.Tokens != 1 {
					t.Errorf("read %+v, want 1 token", c)
				}
			}
		})
	}
	wg.Go(func() { s.Close() })
	wg.Wait()
}

// openSQLite opens the SQLite ledger at path, closed when the test ends.
func openSQLite(t *testing.T, path string) *SQLite {
	t.Helper()
	s, err := OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A commit by someone else that lands between a store's statement and its
// second look at the WAL-index header is not hidden: what the store read
// or wrote is not kept, and the next read runs a statement.
func TestLedgerKeepsNothingACommitFollowed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := Key{Session: "s"}
	for _, tc := range []struct {
		name string
		do   func(s *SQLite) error
	}{
		{"a read", func(s *SQLite) error { _, err := s.Get(ctx, k, ""); return err }},
		{"a charge", func(s *SQLite) error { _, err := s.Charge(ctx, k, "", 1, 0); return err }},
		// SQLite writes nothing for a change that leaves the row's bytes as
		// they were (here within one second: the same updated_at), so the
		// one commit between the headers is the other store's.
		{"a write that changes nothing", func(s *SQLite) error { _, err := s.Charge(ctx, k, "", 0, 0); return err }},
		{"a role set to the one it is", func(s *SQLite) error { _, err := s.SetRole(ctx, k, "coder"); return err }},
		{"a shell slot given back when none is taken", func(s *SQLite) error { _, err := s.ReleaseShell(ctx, k, ""); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "ledger.db")
			s, other := openSQLite(t, path), openSQLite(t, path)
			if _, err := s.SetRole(ctx, k, "coder"); err != nil { // kept, as it was
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, k, ""); err != nil {
				t.Fatal(err)
			}
			s.between = func() {
				s.between = nil
				if _, err := other.Charge(ctx, k, "", 10, 0); err != nil {
					t.Error(err)
				}
			}
			if err := tc.do(s); err != nil {
				t.Fatal(err)
			}
			want, err := other.Get(ctx, k, "")
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, k, ""); err != nil || got != want {
				t.Errorf("read after: %+v %v, want %+v", got, err, want)
			}
		})
	}
}

// A change that waits for a lock another connection holds waits only as
// long as its context lasts, in a transaction (with a period) or not:
// the statements run without the context's end, and the wait is the
// store's own.
func TestLedgerWaitsForALockWhileItsContextLasts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, period := range []Period{"", "day:2026-12-03"} {
		path := filepath.Join(t.TempDir(), "ledger.db")
		s := openSQLite(t, path)
		k := Key{Agent: "a", Session: "s"}
		if _, err := s.Charge(ctx, k, period, 1, 0); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err = s.Charge(short, k, period, 1, 0)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("period %q: a charge while the ledger is locked: %v, want the context's deadline", period, err)
		}
		conn.ExecContext(ctx, "ROLLBACK")
		conn.Close()
		db.Close()
		if c, err := s.Charge(ctx, k, period, 1, 0); err != nil || c.Tokens != 2 {
			t.Errorf("period %q: a charge once the lock is let go: %+v %v, want 2 tokens", period, c, err)
		}
	}
}

// A call's deadline bounds its wait for the store's connection: while a
// listing holds it (a long one, of every session), a charge whose
// deadline passes fails with the deadline instead of going through late.
func TestLedgerCallsEndAtTheirDeadlineWhileAListingRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openSQLite(t, filepath.Join(t.TempDir(), "ledger.db"))
	listing, release := make(chan struct{}), make(chan struct{})
	s.listing = func() {
		close(listing)
		<-release
	}
	listed := make(chan error, 1)
	go func() {
		_, err := s.Sessions(ctx, "")
		listed <- err
	}()
	<-listing
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	charged := make(chan error, 1)
	go func() {
		_, err := s.Charge(short, Key{Agent: "a", Session: "x"}, "", 1, 0)
		charged <- err
	}()
	select {
	case err := <-charged:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a charge while a listing runs: %v, want its deadline", err)
		}
		close(release)
	case <-time.After(10 * time.Second): // not a wait for it: a bound on a failure
		t.Errorf("a charge with a deadline of 20 ms waited 10 s for a listing")
		close(release)
		<-charged
	}
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
	if c, err := s.Charge(ctx, Key{Agent: "a", Session: "x"}, "", 1, 0); err != nil || c.Tokens != 1 {
		t.Errorf("a charge after the listing: %+v %v, want 1 token (the one that timed out made none)", c, err)
	}
}

func TestSharedMapping(t *testing.T) {
	const (
		name = "/home/a b/ledger.db-shm"
		ino  = 4242
	)
	at := func(maps string) (uintptr, error) {
		m, err := sharedMapping([]byte(maps), name, ino, 96)
		if err != nil {
			return 0, err
		}
		return uintptr(unsafe.Pointer(unsafe.SliceData(m))), nil
	}
	for _, tc := range []struct {
		name string
		maps string
		want uintptr // 0: none
	}{
		{"SQLite's mapping", "7f0000000000-7f0000008000 rw-s 00000000 fe:00 4242                       /home/a b/ledger.db-shm\n", 0x7f0000000000},
		{"among others", "55e000000000-55e000001000 r--p 00000000 fe:00 99 /usr/bin/harness\n" +
			"7f0000010000-7f0000018000 rw-s 00008000 fe:00 4242 /home/a b/ledger.db-shm\n" +
			"7f0000000000-7f0000008000 rw-s 00000000 fe:00 4242 /home/a b/ledger.db-shm\n", 0x7f0000000000},
		// btrfs: stat gives the subvolume's device, the maps the file system's.
		{"a device that is not stat's", "7f0000000000-7f0000008000 rw-s 00000000 00:28 4242 /home/a b/ledger.db-shm\n", 0x7f0000000000},
		{"another file of that inode", "7f0000000000-7f0000008000 rw-s 00000000 00:01 4242 /memfd:x (deleted)\n", 0},
		{"the file deleted", "7f0000000000-7f0000008000 rw-s 00000000 fe:00 4242 /home/a b/ledger.db-shm (deleted)\n", 0},
		{"another inode", "7f0000000000-7f0000008000 rw-s 00000000 fe:00 4243 /home/a b/ledger.db-shm\n", 0},
		{"a private mapping", "7f0000000000-7f0000008000 rw-p 00000000 fe:00 4242 /home/a b/ledger.db-shm\n", 0},
		{"not from the start", "7f0000000000-7f0000008000 rw-s 00008000 fe:00 4242 /home/a b/ledger.db-shm\n", 0},
		{"too small", "7f0000000000-7f0000000010 rw-s 00000000 fe:00 4242 /home/a b/ledger.db-shm\n", 0},
		{"at address 0", "0-7f0000008000 rw-s 00000000 fe:00 4242 /home/a b/ledger.db-shm\n", 0},
		{"mapped twice", "7f0000000000-7f0000008000 rw-s 00000000 fe:00 4242 /home/a b/ledger.db-shm\n" +
			"7f1000000000-7f1000008000 rw-s 00000000 fe:00 4242 /home/a b/ledger.db-shm\n", 0},
		{"a line cut short", "7f0000000000-7f0000008000 rw-s 00000000 fe:00\n", 0},
		{"nothing", "", 0},
	} {
		got, err := at(tc.maps)
		if got != tc.want || (err == nil) != (tc.want != 0) {
			t.Errorf("%s: %#x %v, want %#x", tc.name, got, err, tc.want)
		}
	}
}

// Whatever /proc/self/maps holds, its reading does not crash, and finds
// only a mapping of the file's name, of the size asked for.
func FuzzSharedMapping(f *testing.F) {
	f.Add("7f0000000000-7f0000008000 rw-s 00000000 fe:00 4242 /l/ledger.db-shm\n")
	f.Add("7f0000000000-7f0000008000 rw-s 0000000000000000 fe:00 04242   /l/ledger.db-shm\n55-56 r--p 0 0:0 0\n")
	f.Fuzz(func(t *testing.T, maps string) {
		m, err := sharedMapping([]byte(maps), "/l/ledger.db-shm", 4242, 96)
		if err != nil {
			return
		}
		if len(m) != 96 || !strings.Contains(maps, "/l/ledger.db-shm") || !strings.Contains(maps, "4242") {
			t.Errorf("found a mapping of %d bytes in %q", len(m), maps)
		}
	})
}

// An index that cannot be found is no error of the store's: openWALMark
// says why, and lets go of the connection it opened (which would hold the
// ledger's index in use).
func TestWALMarkFailsQuietly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	w, err := openWALMark(context.Background(), "file:"+path+"?_pragma=journal_mode(WAL)", filepath.Join(t.TempDir(), "elsewhere.db"))
	if err == nil || w != nil {
		t.Errorf("an index that is not there: %v, %v", w, err)
	}
	out, err := child(t, "dms", "sqlite:"+path, "", 0).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != "free\n" {
		t.Errorf("the ledger's index after a failed open: %q, want free", got)
	}
}
