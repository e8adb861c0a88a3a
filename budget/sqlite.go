package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, "sqlite"
)

// SQLite is the embedded store: one file that several processes may use at
// once. It runs in WAL mode, so readers never wait for the writer, and every
// change is one statement (an upsert with RETURNING), so a change is atomic
// across processes without explicit transactions. With synchronous=NORMAL a
// committed change survives the process being killed at any point (the OS
// has it); it may be lost only if the machine itself loses power.
type SQLite struct {
	db    *sql.DB
	path  string
	now   func() time.Time
	stmts map[string]*sql.Stmt // prepared once: parsing is a large part of a small statement's cost
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
	PRIMARY KEY (agent, session)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_by_session ON sessions (session)`

// OpenSQLite opens (creating if needed) the ledger file at path.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("sqlite ledger: empty path")
	}
	if err := ensureDir(path); err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger %s: %w", path, err)
	}
	// One connection: statements of this process queue in database/sql
	// instead of contending for SQLite's write lock.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite ledger %s: %w", path, err)
	}
	s := &SQLite{db: db, path: path, now: time.Now, stmts: map[string]*sql.Stmt{}}
	for name, query := range queries {
		st, err := db.PrepareContext(ctx, query)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite ledger %s: preparing %s: %w", path, name, err)
		}
		s.stmts[name] = st
	}
	return s, nil
}

const returning = ` RETURNING tokens, shell, cost_micros, role`

// queries are the ledger's statements, by name. Each is one atomic change.
var queries = map[string]string{
	"get": `SELECT tokens, shell, cost_micros, role FROM sessions WHERE agent = ? AND session = ?`,
	"init_role": `INSERT INTO sessions (agent, session, role, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (agent, session) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at
		WHERE role = ''` + returning,
	"set_role": `INSERT INTO sessions (agent, session, role, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (agent, session) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at` + returning,
	"switch_role": `UPDATE sessions SET role = ?, updated_at = ? WHERE agent = ? AND session = ? AND role = ?` + returning,
	// A new session is in the expected state only if the decision saw zero
	// shell calls and no role.
	"reserve_new": `INSERT INTO sessions (agent, session, shell, updated_at) VALUES (?, ?, 1, ?)
		ON CONFLICT (agent, session) DO UPDATE SET shell = shell + 1, updated_at = excluded.updated_at
		WHERE shell = 0 AND role = ''` + returning,
	"reserve": `UPDATE sessions SET shell = shell + 1, updated_at = ?
		WHERE agent = ? AND session = ? AND shell = ? AND role = ?` + returning,
	"add_shell": `INSERT INTO sessions (agent, session, shell, updated_at) VALUES (?, ?, 1, ?)
		ON CONFLICT (agent, session) DO UPDATE SET shell = shell + 1, updated_at = excluded.updated_at` + returning,
	"charge": `INSERT INTO sessions (agent, session, tokens, cost_micros, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (agent, session) DO UPDATE SET tokens = tokens + excluded.tokens,
			cost_micros = cost_micros + excluded.cost_micros, updated_at = excluded.updated_at` + returning,
	"reset": `UPDATE sessions SET tokens = 0, shell = 0, cost_micros = 0, updated_at = ?
		WHERE agent = ? AND session = ?`,
	"sessions": `SELECT agent, session, tokens, shell, cost_micros, role, updated_at FROM sessions
		WHERE ? = '' OR session = ? ORDER BY updated_at DESC, agent, session`,
}

// Path is the ledger file.
func (s *SQLite) Path() string { return s.path }

// row runs a statement that returns one session's counters; ok is false
// when it returned no row.
func (s *SQLite) row(ctx context.Context, k Key, name string, args ...any) (Counters, bool, error) {
	if err := k.Validate(); err != nil {
		return Counters{}, false, err
	}
	var c Counters
	err := s.stmts[name].QueryRowContext(ctx, args...).Scan(&c.Tokens, &c.Shell, &c.CostMicros, &c.Role)
	if errors.Is(err, sql.ErrNoRows) {
		return Counters{}, false, nil
	}
	if err != nil {
		return Counters{}, false, fmt.Errorf("sqlite ledger: %w", err)
	}
	return c, true, nil
}

func (s *SQLite) Get(ctx context.Context, k Key) (Counters, error) {
	c, _, err := s.row(ctx, k, "get", k.Agent, k.Session)
	return c, err
}

func (s *SQLite) InitRole(ctx context.Context, k Key, role string) (Counters, error) {
	c, ok, err := s.row(ctx, k, "init_role", k.Agent, k.Session, role, s.now().Unix())
	if err != nil || ok {
		return c, err
	}
	return s.Get(ctx, k) // it had a role already
}

func (s *SQLite) SetRole(ctx context.Context, k Key, role string) (Counters, error) {
	c, _, err := s.row(ctx, k, "set_role", k.Agent, k.Session, role, s.now().Unix())
	return c, err
}

func (s *SQLite) SwitchRole(ctx context.Context, k Key, from, to string) (Counters, bool, error) {
	c, ok, err := s.row(ctx, k, "switch_role", to, s.now().Unix(), k.Agent, k.Session, from)
	if err != nil || ok {
		return c, ok, err
	}
	c, err = s.Get(ctx, k)
	return c, false, err
}

func (s *SQLite) ReserveShell(ctx context.Context, k Key, expected Counters) (Counters, bool, error) {
	var c Counters
	var ok bool
	var err error
	if expected.Shell == 0 && expected.Role == "" {
		c, ok, err = s.row(ctx, k, "reserve_new", k.Agent, k.Session, s.now().Unix())
	} else {
		c, ok, err = s.row(ctx, k, "reserve", s.now().Unix(), k.Agent, k.Session, expected.Shell, expected.Role)
	}
	if err != nil || ok {
		return c, ok, err
	}
	c, err = s.Get(ctx, k)
	return c, false, err
}

func (s *SQLite) AddShell(ctx context.Context, k Key) (Counters, error) {
	c, _, err := s.row(ctx, k, "add_shell", k.Agent, k.Session, s.now().Unix())
	return c, err
}

func (s *SQLite) Charge(ctx context.Context, k Key, tokens, cost int64) (Counters, error) {
	if err := checkCharge(tokens, cost); err != nil {
		return Counters{}, err
	}
	c, _, err := s.row(ctx, k, "charge", k.Agent, k.Session, tokens, cost, s.now().Unix())
	return c, err
}

func (s *SQLite) Reset(ctx context.Context, k Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	res, err := s.stmts["reset"].ExecContext(ctx, s.now().Unix(), k.Agent, k.Session)
	if err != nil {
		return fmt.Errorf("sqlite ledger: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrNoSession
	}
	return nil
}

func (s *SQLite) Sessions(ctx context.Context, session string) ([]Session, error) {
	rows, err := s.stmts["sessions"].QueryContext(ctx, session, session)
	if err != nil {
		return nil, fmt.Errorf("sqlite ledger: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var x Session
		var updated int64
		if err := rows.Scan(&x.Agent, &x.Session, &x.Tokens, &x.Shell, &x.CostMicros, &x.Role, &updated); err != nil {
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

func (s *SQLite) Close() error { return s.db.Close() }

// checkCharge refuses charges that would lower usage.
func checkCharge(tokens, cost int64) error {
	if tokens < 0 || cost < 0 {
		return fmt.Errorf("a charge cannot be negative (tokens %d, cost %d micro-dollars): usage only grows", tokens, cost)
	}
	return nil
}
