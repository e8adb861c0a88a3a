package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
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
// The file must be the one this process's SQLite uses: SQLite deletes it
// when the last connection to the ledger closes, and the next connection
// makes a new one. So a walMark holds a connection of its own, opened
// before the file is mapped and closed after it is unmapped, that does
// nothing else.
type walMark struct {
	mem  []byte
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
	walMapSize = 4096
)

// openWALMark maps the WAL-index of the ledger whose data source name is
// dsn and whose file (symbolic links resolved, as SQLite does) is ledger.
// It fails when there is none: the ledger is not in WAL mode (a file
// system without shared memory leaves it in another), or its index lives
// in a process's memory.
func openWALMark(ctx context.Context, dsn, ledger string) (w *walMark, err error) {
	w = &walMark{}
	if w.db, err = sql.Open("sqlite", dsn); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if w.hold, err = w.db.Conn(ctx); err != nil {
		return nil, err
	}
	var mode string
	if err := w.hold.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return nil, err
	}
	if !strings.EqualFold(mode, "wal") {
		return nil, fmt.Errorf("the ledger is in %s mode, not WAL", mode)
	}
	// A read opens the WAL and its index.
	var n int
	if err := w.hold.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		return nil, err
	}
	f, err := os.Open(ledger + "-shm")
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	if st, err := f.Stat(); err != nil || st.Size() < walMapSize {
		return nil, fmt.Errorf("the WAL-index is not initialised")
	}
	if w.mem, err = syscall.Mmap(int(f.Fd()), 0, walMapSize, syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
		return nil, err
	}
	for range 1000 { // a commit under way reads as unknown, for a moment
		if _, ok := w.read(); ok {
			return w, nil
		}
		runtime.Gosched()
	}
	return nil, errors.New("the WAL-index header does not read")
}

// close unmaps the file, then lets go of the connection.
func (w *walMark) close() {
	if w.mem != nil {
		syscall.Munmap(w.mem)
		w.mem = nil
	}
	if w.hold != nil {
		w.hold.Close()
	}
	w.db.Close()
}

// read returns the header as every new reader of the ledger sees it now.
// ok is false when it cannot tell: a commit is under way (the copies
// differ), or the file was cut short under the mapping (a fault, read as
// "cannot tell" rather than crashing the process).
//
// It reads the two copies, the first first: the reverse of the order a
// commit writes them, as SQLite's readers do.
func (w *walMark) read() (h mark, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			h, ok = mark{}, false
		}
	}()
	var second mark
	for i := range h {
		h[i] = atomic.LoadUint32((*uint32)(unsafe.Pointer(&w.mem[4*i])))
	}
	for i := range second {
		second[i] = atomic.LoadUint32((*uint32)(unsafe.Pointer(&w.mem[walHdrSize+4*i])))
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
