package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // the pure-Go SQLite driver, "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite is the embedded store: one file that several processes may use at
// once. It runs in WAL mode, so readers never wait for the writer, and every
// change is one statement (an upsert with RETURNING), so a change is atomic
// across processes without explicit transactions; a change of a session
// and of its agent's counters is one transaction. With synchronous=NORMAL a
// committed change survives the process being killed at any point (the OS
// has it); it may be lost only if the machine itself loses power.
//
// A read is answered without a statement while nothing was committed to
// the ledger since the counters were last read or written by this store:
// the WAL-index header (walMark) tells that, whoever committed.
type SQLite struct {
	db    *sql.DB
	path  string
	now   func() time.Time
	stmts map[string]*sql.Stmt // prepared once: parsing is a large part of a small statement's cost
	// wal reads the ledger's WAL-index header; nil when it cannot
	// (then every read is a statement).
	wal    *walMark
	recent recent
	// turn is the store's one connection, taken in turn by the attempts
	// of its operations (see attempt).
	turn chan struct{}
	// reads counts the reads that ran a statement.
	reads atomic.Int64
	// rows counts the statements that returned a row of counters.
	rows atomic.Int64
	// between, if set, runs between a statement and the second look at
	// the WAL-index header: tests commit there.
	between func()
	// listing, if set, runs while a listing holds the connection.
	listing func()
}

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	agent       TEXT    NOT NULL,
	session     TEXT    NOT NULL,
	tokens      INTEGER NOT NULL DEFAULT 0,
	shell       INTEGER NOT NULL DEFAULT 0,
	cost_micros INTEGER NOT NULL DEFAULT 0,
	role        TEXT    NOT NULL DEFAULT '',
	updated_at  INTEGER NOT NULL DEFAULT 0,
	project     TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (agent, session)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_by_session ON sessions (session);
CREATE TABLE IF NOT EXISTS agents (
	agent       TEXT    NOT NULL,
	period      TEXT    NOT NULL,
	tokens      INTEGER NOT NULL DEFAULT 0,
	shell       INTEGER NOT NULL DEFAULT 0,
	cost_micros INTEGER NOT NULL DEFAULT 0,
	updated_at  INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (agent, period)
) WITHOUT ROWID`

// OpenSQLite opens (creating if needed) the ledger file at path.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("sqlite ledger: empty path")
	}
	if err := ensureDir(path); err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(0)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger %s: %w", path, err)
	}
	// One connection: statements of this process queue in database/sql
	// instead of contending for SQLite's write lock.
	db.SetMaxOpenConns(1)
	if err := attempt(ctx, func(ctx context.Context) error { _, err := db.ExecContext(ctx, schema); return err }); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite ledger %s: %w", path, err)
	}
	if err := attempt(ctx, func(ctx context.Context) error { return migrate(ctx, db) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite ledger %s: %w", path, err)
	}
	s := &SQLite{db: db, path: path, now: time.Now, stmts: map[string]*sql.Stmt{}, turn: make(chan struct{}, 1)}
	for name, query := range queries {
		var st *sql.Stmt
		err := attempt(ctx, func(ctx context.Context) (err error) { st, err = db.PrepareContext(ctx, query); return err })
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite ledger %s: preparing %s: %w", path, name, err)
		}
		s.stmts[name] = st
	}
	s.wal = walMarkOf(ctx, dsn, path)
	return s, nil
}

// walMarkOf maps the WAL-index of the ledger at path (dsn). nil when it
// cannot be read: reads are then statements, as before.
func walMarkOf(ctx context.Context, dsn, path string) *walMark {
	// SQLite names the index after the file a link points to.
	real, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	if real, err = filepath.EvalSymlinks(real); err != nil {
		return nil
	}
	w, err := openWALMark(ctx, dsn, real)
	if err != nil {
		return nil
	}
	return w
}

// migrate brings a ledger file of an earlier version up to the schema:
// sessions got a project column.
func migrate(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('sessions') WHERE name = 'project'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, `ALTER TABLE sessions ADD COLUMN project TEXT NOT NULL DEFAULT ''`)
	if err != nil && strings.Contains(err.Error(), "duplicate column") {
		return nil // another process got there first
	}
	return err
}

const (
	returning      = ` RETURNING tokens, shell, cost_micros, role, project`
	agentReturning = ` RETURNING tokens, shell, cost_micros`
)

// queries are the ledger's statements, by name. Each is one atomic change;
// a change of a session and of its agent's period is two, in a transaction.
var queries = map[string]string{
	"get":       `SELECT tokens, shell, cost_micros, role, project FROM sessions WHERE agent = ? AND session = ?`,
	"get_agent": `SELECT tokens, shell, cost_micros FROM agents WHERE agent = ? AND period = ?`,
	"init_role": `INSERT INTO sessions (agent, session, role, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (agent, session) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at
		WHERE role = ''` + returning,
	"set_role": `INSERT INTO sessions (agent, session, role, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (agent, session) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at` + returning,
	"switch_role": `UPDATE sessions SET role = ?, updated_at = ? WHERE agent = ? AND session = ? AND role = ?` + returning,
	"pin_project": `INSERT INTO sessions (agent, session, project, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (agent, session) DO UPDATE SET project = excluded.project, updated_at = excluded.updated_at
		WHERE project = ''` + returning,
	// A new session is in the expected state only if the decision saw zero
	// shell calls and no role.
	"reserve_new": `INSERT INTO sessions (agent, session, shell, updated_at) VALUES (?, ?, 1, ?)
		ON CONFLICT (agent, session) DO UPDATE SET shell = shell + 1, updated_at = excluded.updated_at
		WHERE shell = 0 AND role = ''` + returning,
	"reserve": `UPDATE sessions SET shell = shell + 1, updated_at = ?
		WHERE agent = ? AND session = ? AND shell = ? AND role = ?` + returning,
	// reserve when every counter is still as expected (see charge_exact).
	"reserve_exact": `UPDATE sessions SET shell = shell + 1, updated_at = ?
		WHERE agent = ? AND session = ? AND shell = ? AND role = ? AND tokens = ? AND cost_micros = ? AND project = ?`,
	"add_shell": `INSERT INTO sessions (agent, session, shell, updated_at) VALUES (?, ?, 1, ?)
		ON CONFLICT (agent, session) DO UPDATE SET shell = shell + 1, updated_at = excluded.updated_at` + returning,
	// A charge that would take a count past the largest int64 changes
	// nothing and returns no row (SQLite would store the sum as a float).
	"charge": `INSERT INTO sessions (agent, session, tokens, cost_micros, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (agent, session) DO UPDATE SET tokens = tokens + excluded.tokens,
			cost_micros = cost_micros + excluded.cost_micros, updated_at = excluded.updated_at
		WHERE tokens <= 9223372036854775807 - excluded.tokens AND cost_micros <= 9223372036854775807 - excluded.cost_micros` + returning,
	// A charge worked out against counters that are still the same; a new
	// session matches only zero usage.
	"charge_if_new": `INSERT INTO sessions (agent, session, tokens, cost_micros, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (agent, session) DO UPDATE SET tokens = tokens + excluded.tokens,
			cost_micros = cost_micros + excluded.cost_micros, updated_at = excluded.updated_at
		WHERE tokens = 0 AND cost_micros = 0` + returning,
	"charge_if": `UPDATE sessions SET tokens = tokens + ?, cost_micros = cost_micros + ?, updated_at = ?
		WHERE agent = ? AND session = ? AND tokens = ? AND cost_micros = ?` + returning,
	// charge_if when every counter is still as expected: the counters
	// after are known without RETURNING, whose rows cost a charge about a
	// third of its time (see ChargeIf).
	"charge_exact": `UPDATE sessions SET tokens = tokens + ?, cost_micros = cost_micros + ?, updated_at = ?
		WHERE agent = ? AND session = ? AND tokens = ? AND cost_micros = ? AND shell = ? AND role = ? AND project = ?`,
	"release_shell": `UPDATE sessions SET shell = max(shell - 1, 0), updated_at = ? WHERE agent = ? AND session = ?` + returning,
	"reset": `UPDATE sessions SET tokens = 0, shell = 0, cost_micros = 0, updated_at = ?
		WHERE agent = ? AND session = ?`,
	"sessions": `SELECT agent, session, tokens, shell, cost_micros, role, project, updated_at FROM sessions
		WHERE ? = '' OR session = ? ORDER BY updated_at DESC, agent, session`,
	// The agent's counters of a period: added to, or a shell slot taken
	// if the count is still the one decided on.
	"agent_add": `INSERT INTO agents (agent, period, tokens, shell, cost_micros, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (agent, period) DO UPDATE SET tokens = tokens + excluded.tokens, shell = shell + excluded.shell,
			cost_micros = cost_micros + excluded.cost_micros, updated_at = excluded.updated_at
		WHERE tokens <= 9223372036854775807 - excluded.tokens AND cost_micros <= 9223372036854775807 - excluded.cost_micros` + agentReturning,
	"agent_reserve_new": `INSERT INTO agents (agent, period, shell, updated_at) VALUES (?, ?, 1, ?)
		ON CONFLICT (agent, period) DO UPDATE SET shell = shell + 1, updated_at = excluded.updated_at
		WHERE shell = 0` + agentReturning,
	"agent_reserve": `UPDATE agents SET shell = shell + 1, updated_at = ?
		WHERE agent = ? AND period = ? AND shell = ?` + agentReturning,
	"agent_reserve_exact": `UPDATE agents SET shell = shell + 1, updated_at = ?
		WHERE agent = ? AND period = ? AND shell = ? AND tokens = ? AND cost_micros = ?`,
	"agent_reset": `UPDATE agents SET tokens = 0, shell = 0, cost_micros = 0, updated_at = ?
		WHERE agent = ? AND period = ?`,
	"agent_charge_if_new": `INSERT INTO agents (agent, period, tokens, cost_micros, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (agent, period) DO UPDATE SET tokens = tokens + excluded.tokens,
			cost_micros = cost_micros + excluded.cost_micros, updated_at = excluded.updated_at
		WHERE tokens = 0 AND cost_micros = 0` + agentReturning,
	"agent_charge_if": `UPDATE agents SET tokens = tokens + ?, cost_micros = cost_micros + ?, updated_at = ?
		WHERE agent = ? AND period = ? AND tokens = ? AND cost_micros = ?` + agentReturning,
	"agent_charge_exact": `UPDATE agents SET tokens = tokens + ?, cost_micros = cost_micros + ?, updated_at = ?
		WHERE agent = ? AND period = ? AND tokens = ? AND cost_micros = ? AND shell = ?`,
	"agent_release_shell": `UPDATE agents SET shell = max(shell - 1, 0), updated_at = ? WHERE agent = ? AND period = ?` + agentReturning,
}

// Path is the ledger file.
func (s *SQLite) Path() string { return s.path }

// querier is the database or a transaction.
type querier interface {
	StmtContext(ctx context.Context, stmt *sql.Stmt) *sql.Stmt
}

// direct runs prepared statements outside a transaction.
type direct struct{}

func (direct) StmtContext(_ context.Context, st *sql.Stmt) *sql.Stmt { return st }

// row runs a statement that returns one session's counters; ok is false
// when it returned no row.
func (s *SQLite) row(ctx context.Context, q querier, name string, args ...any) (Counters, bool, error) {
	var c Counters
	s.rows.Add(1)
	ctx = context.WithoutCancel(ctx) // see attempt
	err := q.StmtContext(ctx, s.stmts[name]).QueryRowContext(ctx, args...).Scan(&c.Tokens, &c.Shell, &c.CostMicros, &c.Role, &c.Project)
	if errors.Is(err, sql.ErrNoRows) {
		return Counters{}, false, nil
	}
	if err != nil {
		return Counters{}, false, fmt.Errorf("sqlite ledger: %w", err)
	}
	return c, true, nil
}

// agentRow runs a statement that returns an agent's counters of a period.
func (s *SQLite) agentRow(ctx context.Context, q querier, name string, args ...any) (Usage, bool, error) {
	var u Usage
	s.rows.Add(1)
	ctx = context.WithoutCancel(ctx) // see attempt
	err := q.StmtContext(ctx, s.stmts[name]).QueryRowContext(ctx, args...).Scan(&u.Tokens, &u.Shell, &u.CostMicros)
	if errors.Is(err, sql.ErrNoRows) {
		return Usage{}, false, nil
	}
	if err != nil {
		return Usage{}, false, fmt.Errorf("sqlite ledger: %w", err)
	}
	return u, true, nil
}

// change runs a change of the session (session, its statement) and, with a
// period, of the agent's counters (agent, its statement; nil for none): in
// one transaction when both change, so that both or neither do. ok is
// false when either statement changed nothing (a compare-and-swap that
// lost), and then nothing changed and the current counters are returned.
//
// A change that was the only commit between the WAL-index headers read
// before and after it, of counters this store knew at before, leaves its
// counters to be read again without a statement.
func (s *SQLite) change(ctx context.Context, k Key, period Period, session func(querier) (Counters, bool, error), agent func(querier) (Usage, bool, error)) (Counters, bool, error) {
	if err := validate(k, period); err != nil {
		return Counters{}, false, err
	}
	var c Counters
	var ok bool
	once := func(ctx context.Context) (err error) {
		c, ok, err = s.changeOnce(ctx, k, period, session, agent)
		return err
	}
	kept := period
	if agent == nil {
		kept = "" // the counters hold no agent's usage
	}
	var (
		before     mark
		prev       Counters
		known, had bool
	)
	if s.wal != nil {
		before, known = s.wal.read()
		prev, had = s.recent.find(k, kept, before)
	}
	err := s.attempt(ctx, once)
	if err == nil && !ok {
		c, err = s.Get(ctx, k, period) // the current counters, in place of the ones expected
		return c, false, err
	}
	if err != nil || !known || !had || c == prev {
		return c, ok, err
	}
	if s.between != nil {
		s.between()
	}
	// The counters the change returned differ from those at before, so
	// the row changed and there was a commit after before: if it was the
	// only one until after, the counters are those at after. (Had the
	// change ended up writing nothing, as SQLite does when a row's bytes
	// stay the same, a commit between would be someone else's, and the
	// counters, read after it, still those at after.)
	if after, known := s.wal.read(); known && committedOnce(before, after) {
		s.recent.keep(k, kept, c, after)
	}
	return c, ok, err
}

// changeOnce is one attempt at change, without what it leaves to read:
// with ok false, nothing changed, and its counters are none.
func (s *SQLite) changeOnce(ctx context.Context, k Key, period Period, session func(querier) (Counters, bool, error), agent func(querier) (Usage, bool, error)) (Counters, bool, error) {
	if period == "" || agent == nil {
		return session(direct{})
	}
	tx, err := s.db.BeginTx(context.WithoutCancel(ctx), nil) // see attempt
	if err != nil {
		return Counters{}, false, fmt.Errorf("sqlite ledger: %w", err)
	}
	defer tx.Rollback()
	c, ok, err := session(tx)
	if err != nil {
		return Counters{}, false, err
	}
	if ok {
		var a Usage
		if a, ok, err = agent(tx); err != nil {
			return Counters{}, false, err
		}
		c.AgentUsage = a
	}
	if !ok {
		return Counters{}, false, nil // rolled back
	}
	if err := tx.Commit(); err != nil {
		return Counters{}, false, fmt.Errorf("sqlite ledger: %w", err)
	}
	return c, true, nil
}

// Get answers from what this store last read or wrote of the session (and
// period) if the WAL-index header is still the one it was read or written
// at: nothing was committed since, so a statement would read the same.
func (s *SQLite) Get(ctx context.Context, k Key, period Period) (Counters, error) {
	if err := validate(k, period); err != nil {
		return Counters{}, err
	}
	var at mark
	var known bool
	if s.wal != nil {
		at, known = s.wal.read()
	}
	if !known {
		return s.get(ctx, k, period)
	}
	if c, ok := s.recent.find(k, period, at); ok {
		return c, nil
	}
	c, err := s.get(ctx, k, period)
	if err != nil {
		return c, err
	}
	if s.between != nil {
		s.between()
	}
	// Kept at the header read before the statements: if anything was
	// committed since, the header differs and this is not found again
	// (the session and its agent's usage, two statements, may then be of
	// two snapshots).
	s.recent.keep(k, period, c, at)
	return c, nil
}

// get reads the session's counters (and its agent's usage in period).
func (s *SQLite) get(ctx context.Context, k Key, period Period) (c Counters, err error) {
	s.reads.Add(1)
	err = s.attempt(ctx, func(ctx context.Context) error {
		if c, _, err = s.row(ctx, direct{}, "get", k.Agent, k.Session); err != nil || period == "" {
			return err
		}
		c.AgentUsage, _, err = s.agentRow(ctx, direct{}, "get_agent", k.Agent, period)
		return err
	})
	return c, err
}

// setOnce runs a statement that sets a field of the session only if it is
// still empty, and returns the counters either way.
func (s *SQLite) setOnce(ctx context.Context, k Key, name, value string) (Counters, error) {
	c, _, err := s.change(ctx, k, "", func(q querier) (Counters, bool, error) {
		return s.row(ctx, q, name, k.Agent, k.Session, value, s.now().Unix())
	}, nil)
	return c, err
}

func (s *SQLite) InitRole(ctx context.Context, k Key, role string) (Counters, error) {
	return s.setOnce(ctx, k, "init_role", role)
}

func (s *SQLite) PinProject(ctx context.Context, k Key, project string) (Counters, error) {
	return s.setOnce(ctx, k, "pin_project", project)
}

func (s *SQLite) SetRole(ctx context.Context, k Key, role string) (Counters, error) {
	return s.setOnce(ctx, k, "set_role", role)
}

func (s *SQLite) SwitchRole(ctx context.Context, k Key, from, to string) (Counters, bool, error) {
	return s.change(ctx, k, "", func(q querier) (Counters, bool, error) {
		return s.row(ctx, q, "switch_role", to, s.now().Unix(), k.Agent, k.Session, from)
	}, nil)
}

// ReserveShell, as ChargeIf, first tries a compare-and-swap of every
// counter that leaves the counters after known, then the contract's
// statement (shell count and role alone).
func (s *SQLite) ReserveShell(ctx context.Context, k Key, period Period, expected Counters) (Counters, bool, error) {
	now := s.now().Unix()
	return s.change(ctx, k, period, func(q querier) (Counters, bool, error) {
		if expected.Role != "" && fits(expected.Shell, 1) { // the row exists
			ok, err := s.exact(ctx, q, "reserve_exact", now, k.Agent, k.Session,
				expected.Shell, expected.Role, expected.Tokens, expected.CostMicros, expected.Project)
			if err != nil || ok {
				c := expected
				c.Shell, c.AgentUsage = c.Shell+1, Usage{}
				return c, ok, err
			}
		}
		if expected.Shell == 0 && expected.Role == "" {
			return s.row(ctx, q, "reserve_new", k.Agent, k.Session, now)
		}
		return s.row(ctx, q, "reserve", now, k.Agent, k.Session, expected.Shell, expected.Role)
	}, func(q querier) (Usage, bool, error) {
		if a := expected.AgentUsage; a != (Usage{}) && fits(a.Shell, 1) { // the row exists
			ok, err := s.exact(ctx, q, "agent_reserve_exact", now, k.Agent, period, a.Shell, a.Tokens, a.CostMicros)
			if err != nil || ok {
				return Usage{Tokens: a.Tokens, Shell: a.Shell + 1, CostMicros: a.CostMicros}, ok, err
			}
		}
		if expected.AgentUsage.Shell == 0 {
			return s.agentRow(ctx, q, "agent_reserve_new", k.Agent, period, now)
		}
		return s.agentRow(ctx, q, "agent_reserve", now, k.Agent, period, expected.AgentUsage.Shell)
	})
}

func (s *SQLite) AddShell(ctx context.Context, k Key, period Period) (Counters, error) {
	now := s.now().Unix()
	c, _, err := s.change(ctx, k, period, func(q querier) (Counters, bool, error) {
		return s.row(ctx, q, "add_shell", k.Agent, k.Session, now)
	}, func(q querier) (Usage, bool, error) {
		return s.agentRow(ctx, q, "agent_add", k.Agent, period, 0, 1, 0, now)
	})
	return c, err
}

func (s *SQLite) Charge(ctx context.Context, k Key, period Period, tokens, cost int64) (Counters, error) {
	if err := checkCharge(tokens, cost); err != nil {
		return Counters{}, err
	}
	now := s.now().Unix()
	c, ok, err := s.change(ctx, k, period, func(q querier) (Counters, bool, error) {
		return s.row(ctx, q, "charge", k.Agent, k.Session, tokens, cost, now)
	}, func(q querier) (Usage, bool, error) {
		return s.agentRow(ctx, q, "agent_add", k.Agent, period, tokens, 0, cost, now)
	})
	if err == nil && !ok {
		return Counters{}, errOverflow(tokens, cost)
	}
	return c, err
}

// ChargeIf first tries the charge as a compare-and-swap of every counter
// (charge_exact), which, when it changes the row, leaves the counters
// after known: expected's, with the charge added. Only when that changes
// nothing (another call moved a counter, or the row is new) does it run
// the statement of the contract, which compares tokens and cost alone and
// returns the row. Both are the same change when both change the row; the
// first needs no RETURNING, whose rows cost a charge after the ledger has
// been idle (a gateway's charge, after its upstream answered) about a
// third of its time.
func (s *SQLite) ChargeIf(ctx context.Context, k Key, period Period, expected Counters, tokens, cost int64) (Counters, bool, error) {
	if err := checkChargeIf(expected, period, tokens, cost); err != nil {
		return Counters{}, false, err
	}
	now := s.now().Unix()
	return s.change(ctx, k, period, func(q querier) (Counters, bool, error) {
		if expected.Role != "" { // the row exists
			ok, err := s.exact(ctx, q, "charge_exact", tokens, cost, now, k.Agent, k.Session,
				expected.Tokens, expected.CostMicros, expected.Shell, expected.Role, expected.Project)
			if err != nil || ok {
				c := expected
				c.Tokens, c.CostMicros, c.AgentUsage = c.Tokens+tokens, c.CostMicros+cost, Usage{}
				return c, ok, err
			}
		}
		if expected.Tokens == 0 && expected.CostMicros == 0 {
			return s.row(ctx, q, "charge_if_new", k.Agent, k.Session, tokens, cost, now)
		}
		return s.row(ctx, q, "charge_if", tokens, cost, now, k.Agent, k.Session, expected.Tokens, expected.CostMicros)
	}, func(q querier) (Usage, bool, error) {
		a := expected.AgentUsage
		if a != (Usage{}) { // the row exists
			ok, err := s.exact(ctx, q, "agent_charge_exact", tokens, cost, now, k.Agent, period, a.Tokens, a.CostMicros, a.Shell)
			if err != nil || ok {
				return Usage{Tokens: a.Tokens + tokens, Shell: a.Shell, CostMicros: a.CostMicros + cost}, ok, err
			}
		}
		if a.Tokens == 0 && a.CostMicros == 0 {
			return s.agentRow(ctx, q, "agent_charge_if_new", k.Agent, period, tokens, cost, now)
		}
		return s.agentRow(ctx, q, "agent_charge_if", tokens, cost, now, k.Agent, period, a.Tokens, a.CostMicros)
	})
}

// exact runs a compare-and-swap that returns no row: ok is whether it
// changed one.
func (s *SQLite) exact(ctx context.Context, q querier, name string, args ...any) (bool, error) {
	ctx = context.WithoutCancel(ctx) // see attempt
	r, err := q.StmtContext(ctx, s.stmts[name]).ExecContext(ctx, args...)
	if err != nil {
		return false, fmt.Errorf("sqlite ledger: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite ledger: %w", err)
	}
	return n == 1, nil
}

func (s *SQLite) ReleaseShell(ctx context.Context, k Key, period Period) (Counters, error) {
	now := s.now().Unix()
	c, ok, err := s.change(ctx, k, period, func(q querier) (Counters, bool, error) {
		return s.row(ctx, q, "release_shell", now, k.Agent, k.Session)
	}, func(q querier) (Usage, bool, error) {
		u, found, err := s.agentRow(ctx, q, "agent_release_shell", now, k.Agent, period)
		return u, found || err == nil, err // an agent without counters has nothing to give back
	})
	if err == nil && !ok {
		return c, ErrNoSession
	}
	return c, err
}

func (s *SQLite) Reset(ctx context.Context, k Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	return s.exec(ctx, "reset", s.now().Unix(), k.Agent, k.Session)
}

func (s *SQLite) ResetAgent(ctx context.Context, agent string, period Period) error {
	if err := validate(Key{Agent: agent, Session: "-"}, period); err != nil {
		return err
	}
	if period == "" {
		return ErrNoSession
	}
	return s.exec(ctx, "agent_reset", s.now().Unix(), agent, period)
}

// exec runs a statement that changes one row: ErrNoSession when there was
// none.
func (s *SQLite) exec(ctx context.Context, name string, args ...any) error {
	var res sql.Result
	err := s.attempt(ctx, func(ctx context.Context) (err error) {
		if res, err = s.stmts[name].ExecContext(context.WithoutCancel(ctx), args...); err != nil {
			return fmt.Errorf("sqlite ledger: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrNoSession
	}
	return nil
}

func (s *SQLite) Sessions(ctx context.Context, session string) (out []Session, err error) {
	// A listing may be long: its statement keeps ctx's end.
	err = s.attempt(ctx, func(ctx context.Context) (err error) {
		out, err = s.sessions(ctx, session)
		return err
	})
	return out, err
}

func (s *SQLite) sessions(ctx context.Context, session string) ([]Session, error) {
	rows, err := s.stmts["sessions"].QueryContext(ctx, session, session)
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	defer rows.Close()
	if s.listing != nil {
		s.listing()
	}
	var out []Session
	for rows.Next() {
		var x Session
		var updated int64
		if err := rows.Scan(&x.Agent, &x.Session, &x.Tokens, &x.Shell, &x.CostMicros, &x.Role, &x.Project, &updated); err != nil {
			return nil, fmt.Errorf("sqlite ledger: %w", err)
		}
		x.Updated = time.Unix(updated, 0)
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	return out, nil
}

func (s *SQLite) Close() error {
	err := s.db.Close()
	if s.wal != nil {
		s.wal.close()
	}
	return err
}

// recent holds the counters a store last read or wrote, each with the
// WAL-index header it was read or written at.
type recent struct {
	mu sync.Mutex
	m  map[recentKey]recentEntry
}

type recentKey struct {
	k      Key
	period Period
}

type recentEntry struct {
	c  Counters
	at mark
}

// maxRecent bounds what recent holds; past it, it starts again empty.
const maxRecent = 4096

// find returns the counters of k in period, if they were read or written
// at header at.
func (r *recent) find(k Key, period Period, at mark) (Counters, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[recentKey{k, period}]
	if !ok || e.at != at {
		return Counters{}, false
	}
	return e.c, true
}

// keep records the counters of k in period, read or written at header at.
func (r *recent) keep(k Key, period Period, c Counters, at mark) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := recentKey{k, period}
	if _, ok := r.m[key]; !ok && len(r.m) >= maxRecent || r.m == nil {
		r.m = make(map[recentKey]recentEntry)
	}
	r.m[key] = recentEntry{c: c, at: at}
}

// busyTimeout is how long a statement waits, at most, for a lock that
// another connection holds before it fails.
const busyTimeout = 10 * time.Second

// busyDelays are the waits between attempts, as SQLite's own busy handler
// has them; past the last, the last again.
var busyDelays = [...]time.Duration{1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100}

// attempt runs f until another connection's lock no longer refuses it
// (SQLITE_BUSY), waiting between attempts for as long as ctx lasts and at
// most busyTimeout. f's statements run without ctx's end (they are given
// context.WithoutCancel): for a context that can end, database/sql and
// the driver each start a goroutine per statement to watch it, which
// costs more than a statement of the ledger takes. What can take long is
// the wait for a lock, and SQLite does not wait (busy_timeout is 0): this
// loop does, and it is the one that watches ctx.
func attempt(ctx context.Context, f func(context.Context) error) error {
	start := time.Now()
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sqlite ledger: %w", err)
		}
		err := f(ctx)
		var e *sqlite.Error
		if !errors.As(err, &e) || e.Code()&0xff != sqlite3.SQLITE_BUSY {
			return err
		}
		wait := busyDelays[min(i, len(busyDelays)-1)] * time.Millisecond
		if time.Since(start)+wait > busyTimeout {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// attempt is the package's attempt for an operation of the store, each
// try of which waits for the store's connection for as long as ctx lasts:
// database/sql's own wait for it would not end with ctx, which the
// statements are not given. An operation's statements, and whatever
// runs within its tries, must not try to take the connection again.
func (s *SQLite) attempt(ctx context.Context, f func(context.Context) error) error {
	return attempt(ctx, func(ctx context.Context) error {
		select {
		case s.turn <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("sqlite ledger: %w", ctx.Err())
		}
		defer func() { <-s.turn }()
		return f(ctx)
	})
}

// checkCharge refuses charges that would lower usage.
func checkCharge(tokens, cost int64) error {
	if tokens < 0 || cost < 0 {
		return fmt.Errorf("a charge cannot be negative (tokens %d, cost %d micro-dollars): usage only grows", tokens, cost)
	}
	return nil
}

// checkChargeIf is checkCharge for a charge against expected: one that
// would take a counter past the largest int64 is refused, by every store
// alike. The counters it changes are expected's (the compare-and-swap
// holds them to it), so the check is exact. Unchecked, the memory store
// wrapped the sum round to a negative count (a budget without end) and
// SQLite stored it as a float that no read could take back.
func checkChargeIf(expected Counters, period Period, tokens, cost int64) error {
	if err := checkCharge(tokens, cost); err != nil {
		return err
	}
	a := expected.AgentUsage
	if !fits(expected.Tokens, tokens) || !fits(expected.CostMicros, cost) ||
		period != "" && (!fits(a.Tokens, tokens) || !fits(a.CostMicros, cost)) {
		return errOverflow(tokens, cost)
	}
	return nil
}

// errOverflow refuses a charge that would take a count past the largest
// int64.
func errOverflow(tokens, cost int64) error {
	return fmt.Errorf("a charge of %d tokens and %d micro-dollars would take the counters past the largest the ledger holds", tokens, cost)
}

// fits reports whether counter+add, add not negative, is an int64.
func fits(counter, add int64) bool { return counter <= math.MaxInt64-add }
