package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// A WAL ledger's file NAME has a shared-memory file NAME-shm, the
// WAL-index, which every connection to it in every process maps. It
// starts with a 48-byte header, kept twice: a commit by any connection
// writes the second copy, then the first. The header holds, among others,
// a change counter that grows by one with each commit (iChange), the
// number of valid frames in the WAL (mxFrame) and the WAL's salts, which
// change when the WAL starts over. A reader's snapshot is the header it
// reads, so a header that reads the same twice means that nothing was
// committed in between, by anyone: this process, another harness, or a
// program that knows nothing of the harness. The format is SQLite's file
// format, documented in "WAL-mode File Format" (sqlite.org/walformat.html,
// "The WAL-Index Header").
//
// walMark reads that header without a statement, so that the ledger can
// answer a read from what it last read or wrote while the header says
// nothing has changed since.
//
// What is read is SQLite's own mapping of the file in this process, found
// in /proc/self/maps: the file this process's SQLite uses, opened by no
// descriptor of the harness's (closing one would drop the locks SQLite
// holds on the file, by which other processes know it is in use). SQLite
// unmaps it when the last connection to the ledger in the process closes,
// so a walMark holds a connection of its own that does nothing else, and
// stops reading before it lets go of it. Where there is no such file
// (not Linux), there is no walMark, and every read is a statement.
type walMark struct {
	mu   sync.RWMutex // held to read; to close, exclusively
	mem  []byte       // nil once closed
	hold *sql.Conn
	db   *sql.DB
}

// mark is one copy of the WAL-index header, as twelve 32-bit words in the
// machine's order.
type mark [12]uint32

// Offsets, in words, of the header's fields that tell what a change was.
const (
	markChange = 2  // iChange
	markInit   = 3  // isInit is its first byte
	markFrames = 4  // mxFrame
	markSalt   = 8  // aSalt[0], aSalt[1]
	walHdrSize = 48 // bytes in one copy
)

// openWALMark finds the WAL-index of the ledger whose data source name is
// dsn and whose file is ledger: an absolute name, symbolic links resolved
// (as SQLite and the kernel name it).
// It fails when there is none: the ledger is not in WAL mode (a file
// system without shared memory leaves it in another), or its index lives
// in a process's memory.
func openWALMark(ctx context.Context, dsn, ledger string) (*walMark, error) {
	w := &walMark{}
	if err := w.open(ctx, dsn, ledger); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// open is openWALMark's work; what it opened, close lets go of.
func (w *walMark) open(ctx context.Context, dsn, ledger string) (err error) {
	if w.db, err = sql.Open("sqlite", dsn); err != nil {
		return err
	}
	if w.hold, err = w.db.Conn(ctx); err != nil {
		return err
	}
	var mode string
	var n int
	if err := attempt(ctx, func(ctx context.Context) error {
		if err := w.hold.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return err
		}
		// A read opens the WAL and maps its index.
		return w.hold.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n)
	}); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("the ledger is in %s mode, not WAL", mode)
	}
	shm := ledger + "-shm"
	var st syscall.Stat_t
	if err := syscall.Stat(shm, &st); err != nil {
		return err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	mem, err := sharedMapping(maps, shm, uint64(st.Ino), 2*walHdrSize)
	if err != nil {
		return fmt.Errorf("%s: %w", shm, err)
	}
	w.mem = mem
	for range 1000 { // a commit under way reads as unknown, for a moment
		if _, ok := w.read(); ok {
			return nil
		}
		runtime.Gosched()
	}
	return errors.New("the WAL-index header does not read")
}

// sharedMapping finds, in maps (the text of /proc/self/maps), the one
// shared mapping from its first byte of the file named name (absolute,
// symbolic links resolved) whose inode is ino, and returns its first size
// bytes. The file is told by its name and inode, not its device: on some
// file systems (btrfs) the device that stat reports is not the one the
// maps show.
func sharedMapping(maps []byte, name string, ino uint64, size int) ([]byte, error) {
	var found []byte
	for line := range strings.Lines(string(maps)) {
		// address perms offset dev inode name; the name is the rest of
		// the line, and may hold spaces.
		var f [5]string
		rest := strings.TrimSuffix(line, "\n")
		for i := range f {
			rest = strings.TrimLeft(rest, " ")
			j := strings.IndexByte(rest, ' ')
			if j < 0 {
				rest = "\x00" // a line cut short: no name matches
				break
			}
			f[i], rest = rest[:j], rest[j:]
		}
		if strings.TrimLeft(rest, " ") != name {
			continue
		}
		if len(f[1]) != 4 || f[1][3] != 's' || strings.Trim(f[2], "0") != "" {
			continue
		}
		if i, err := strconv.ParseUint(f[4], 10, 64); err != nil || i != ino {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || start == 0 || end < start || end-start < uint64(size) {
			continue
		}
		if found != nil {
			return nil, errors.New("mapped more than once from its start")
		}
		found = unsafe.Slice((*byte)(unsafe.Add(nil, uintptr(start))), size) // SQLite's mapping, outside Go's heap
	}
	if found == nil {
		return nil, errors.New("not mapped by SQLite in this process")
	}
	return found, nil
}

// close stops reading the index, then lets go of the connection.
func (w *walMark) close() {
	w.mu.Lock()
	w.mem = nil
	w.mu.Unlock()
	if w.hold != nil {
		w.hold.Close()
	}
	if w.db != nil {
		w.db.Close()
	}
}

// read returns the header as every new reader of the ledger sees it now.
// ok is false when it cannot tell: a commit is under way (the copies
// differ), the walMark is closed, or the file was cut short under the
// mapping (a fault, read as "cannot tell" rather than crashing the
// process).
//
// It reads the two copies, the first first: the reverse of the order a
// commit writes them, as SQLite's readers do.
func (w *walMark) read() (h mark, ok bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.mem == nil {
		return mark{}, false
	}
	return header(w.mem)
}

// header reads the header's two copies at the start of mem.
func header(mem []byte) (h mark, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			h, ok = mark{}, false
		}
	}()
	var second mark
	for i := range h {
		h[i] = atomic.LoadUint32((*uint32)(unsafe.Pointer(&mem[4*i])))
	}
	for i := range second {
		second[i] = atomic.LoadUint32((*uint32)(unsafe.Pointer(&mem[walHdrSize+4*i])))
	}
	initialised := *(*[4]byte)(unsafe.Pointer(&h[markInit]))
	return h, h == second && initialised[0] == 1
}

// committedOnce tells whether exactly one commit lies between the headers
// before and after: the change counter grew by one, the WAL did not start
// over, and it grew. A writer that saw before ahead of its commit and
// after once it returned knows then that the commit was its own and that
// what it wrote is what the ledger holds at after.
func committedOnce(before, after mark) bool {
	return after[markChange] == before[markChange]+1 &&
		after[markSalt] == before[markSalt] && after[markSalt+1] == before[markSalt+1] &&
		after[markFrames] > before[markFrames]
}
