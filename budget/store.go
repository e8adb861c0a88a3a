package budget

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Key names a session's counters: the session id the caller gives, and the
// agent (may be empty) that runs it.
type Key struct {
	Agent   string
	Session string
}

// String writes the key as "agent/session", or the session alone for no
// agent, so that no two keys write the same string: a '/' or '%' in the
// agent is written %2F or %25, and a session with a '/' but no agent is
// written after a '/' ("/ci/S", where "ci/S" is agent ci's session S).
// The transcript book keys its entries by this string, and reports group
// sessions by it.
func (k Key) String() string {
	switch {
	case k.Agent == "" && strings.Contains(k.Session, "/"):
		return "/" + k.Session
	case k.Agent == "":
		return k.Session
	case strings.ContainsAny(k.Agent, "/%"):
		return agentEscaper.Replace(k.Agent) + "/" + k.Session
	}
	return k.Agent + "/" + k.Session
}

// agentEscaper writes an agent's '/' and '%' so that the first '/' of a
// key's string ends its agent.
var agentEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// Validate refuses keys that cannot be stored safely.
func (k Key) Validate() error {
	if k.Session == "" {
		return errors.New("a session id is required")
	}
	for _, s := range []string{k.Agent, k.Session} {
		// No control characters: ids reach the operator's terminal
		// (harness sessions, budget, events), where an escape sequence
		// of an agent's choosing must not.
		if len(s) > 256 || strings.ContainsFunc(s, unicode.IsControl) || !utf8.ValidString(s) {
			return fmt.Errorf("invalid session or agent %q: at most 256 bytes of UTF-8, no control characters", s)
		}
	}
	return nil
}

// validate refuses a key or a period that cannot be stored safely.
func validate(k Key, period Period) error {
	if err := k.Validate(); err != nil {
		return err
	}
	return ValidatePeriod(period)
}

// ValidatePeriod refuses a period name that is not 1 to 64 characters of
// letters, digits, ':' and '-' ("" is none, and valid).
func ValidatePeriod(p Period) error {
	if len(p) > 64 || strings.ContainsFunc(p, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ':' || r == '-')
	}) {
		return fmt.Errorf("invalid budget period %q", p)
	}
	return nil
}

// ErrNoSession is the error of an operation on a session the store does
// not have (that no call, charge or switch ever created).
var ErrNoSession = errors.New("no such session")

// Session is a session the store has: its key, counters and last change.
type Session struct {
	Key
	Counters
	// Updated is when its counters or role last changed (to the second).
	Updated time.Time
}

// Usage is what was spent: context tokens, shell calls and cost in
// micro-dollars.
type Usage struct {
	Tokens     int64 `json:"tokens"`
	Shell      int64 `json:"shell"`
	CostMicros int64 `json:"cost_micros"`
}

// Counters are a session's usage and active role, the project it is pinned
// to, and (for an operation that names a period of the session's agent)
// the agent's usage in that period.
type Counters struct {
	Tokens     int64  `json:"tokens"`
	Shell      int64  `json:"shell"`
	CostMicros int64  `json:"cost_micros"`
	Role       string `json:"role"`
	// Project is the project the session was pinned to ("" until then).
	Project string `json:"project,omitempty"`
	// AgentUsage is the usage of the session's agent, across all its sessions,
	// in the period the operation named; zero when it named none.
	AgentUsage Usage `json:"agent_usage"`
}

// Period names one budget period of an agent's counters: "day:2026-12-01",
// "week:2026-W49", "month:2026-12", "total". An operation given a period
// counts against the agent's counters of that period too, atomically with
// the session's; "" names none (the agent has no budget).
type Period = string

// Store keeps counters. Every method is atomic and safe for concurrent use,
// by goroutines and (for the SQLite and Redis stores) by processes. The
// methods that read or add usage take the period of the agent's counters
// that go with the session's (see Period).
type Store interface {
	// Get returns the session's counters, and the agent's of period; zero
	// counters for a new session. It never creates a session.
	Get(ctx context.Context, k Key, period Period) (Counters, error)
	// InitRole sets the session's role if it has none, and returns the
	// counters as they are then.
	InitRole(ctx context.Context, k Key, role string) (Counters, error)
	// SetRole sets the session's role, keeping its usage.
	SetRole(ctx context.Context, k Key, role string) (Counters, error)
	// SwitchRole sets the session's role to to if it is still from (the
	// role a switch was decided on), keeping its usage. With ok false it
	// returns the current counters: another switch came first.
	SwitchRole(ctx context.Context, k Key, from, to string) (cur Counters, ok bool, err error)
	// PinProject sets the session's project if it has none, and returns
	// the counters as they are then: a session's project, once pinned,
	// never changes.
	PinProject(ctx context.Context, k Key, project string) (Counters, error)
	// ReserveShell takes one shell slot, of the session and of the agent's
	// period, if the counters still have the shell counts and role of
	// expected (those a decision was made on: the session's shell count and
	// role, and with a period the agent's shell count). It returns the
	// counters after the slot was taken, or, with ok false, the current
	// counters when another call changed them first.
	ReserveShell(ctx context.Context, k Key, period Period, expected Counters) (cur Counters, ok bool, err error)
	// AddShell takes one shell slot unconditionally (shadow mode: the call
	// ran although the policy would have refused it).
	AddShell(ctx context.Context, k Key, period Period) (Counters, error)
	// Charge adds tokens and cost to the session and to the agent's
	// period, and returns the counters after.
	Charge(ctx context.Context, k Key, period Period, tokens, costMicros int64) (Counters, error)
	// ChargeIf adds tokens and cost as Charge does, if the counters still
	// have the tokens and cost of expected (the session's, and with a
	// period the agent's): the charge was worked out against them. With ok
	// false nothing changed and the current counters are returned.
	ChargeIf(ctx context.Context, k Key, period Period, expected Counters, tokens, costMicros int64) (cur Counters, ok bool, err error)
	// ReleaseShell gives back a shell slot taken for a call that was never
	// made (it failed before it reached its tool): the session's, and with
	// a period the agent's, each only if above 0.
	ReleaseShell(ctx context.Context, k Key, period Period) (Counters, error)
	// Reset sets the session's usage to zero, keeping its role. It is the
	// operator's command; nothing else lowers usage. A session the store
	// does not have is ErrNoSession.
	Reset(ctx context.Context, k Key) error
	// ResetAgent sets an agent's usage in period to zero: the operator's
	// command. An agent without counters of that period is ErrNoSession.
	ResetAgent(ctx context.Context, agent string, period Period) error
	// Sessions lists the sessions the store has, of every agent; with
	// session set, only those of that id. Get never creates one: a session
	// exists from its first change.
	Sessions(ctx context.Context, session string) ([]Session, error)
	// Close releases the store.
	Close() error
}

// Options tune a store opened from a URL.
type Options struct {
	// Prefix of every Redis key (default "harness:").
	Prefix string
	// TTL of a Redis session's counters after its last change; 0 keeps them.
	TTL time.Duration
	// Timeout bounds each operation on Redis, retries and redirects
	// included (default DefaultTimeout): a server that does not answer, or
	// a cluster slot without a master, is an error within it, not a hang.
	Timeout time.Duration
	// Replicas is how many replicas must have each change of Redis
	// before the store confirms it (Redis's WAIT): a change that reached
	// fewer within the timeout is an error, as it may be lost when a
	// replica takes over. 0 is the default: 1 with Sentinels, none
	// otherwise; a negative number is none.
	Replicas int
	// ReadOnly opens the store for reading only: every change is refused
	// with ErrReadOnly, and an SQLite file that does not exist is not
	// created (the store is then empty). The commands that only show
	// what the ledger holds open it so.
	ReadOnly bool
}

// DefaultTimeout bounds an operation on Redis when Options set none.
const DefaultTimeout = 5 * time.Second

// DefaultPrefix is the Redis key prefix when none is configured.
const DefaultPrefix = "harness:"

// kind is the kind of store a URL names.
type kind int

const (
	kindMemory kind = iota
	kindSQLite
	kindRedis
)

// parseURL reads a store's URL (see Open): its kind, and the SQLite file's
// path. It touches nothing, so that a configuration can be checked before
// anything is opened.
func parseURL(rawURL string) (kind, string, error) {
	switch {
	case rawURL == "memory:" || rawURL == "memory://":
		return kindMemory, "", nil
	case strings.HasPrefix(rawURL, "redis://") || strings.HasPrefix(rawURL, "rediss://") ||
		strings.HasPrefix(rawURL, "redis+") || strings.HasPrefix(rawURL, "rediss+"):
		if _, _, err := redisOptions(rawURL); err != nil {
			return kindRedis, "", err
		}
		return kindRedis, "", nil
	case strings.HasPrefix(rawURL, "sqlite:"):
		if u, err := url.Parse(rawURL); err == nil && u.RawQuery != "" {
			return kindSQLite, "", fmt.Errorf("ledger %q: query parameters are not supported", rawURL)
		}
		return sqlitePath(strings.TrimPrefix(strings.TrimPrefix(rawURL, "sqlite:"), "//"))
	case strings.Contains(rawURL, "://"):
		return 0, "", fmt.Errorf("ledger %q: unknown scheme (want memory:, sqlite:PATH, redis://host:port/db, redis+cluster://host:port,... or redis+sentinel://host:port,.../master)", rawURL)
	case rawURL == "":
		return 0, "", errors.New("ledger: empty URL")
	}
	return sqlitePath(rawURL)
}

func sqlitePath(path string) (kind, string, error) {
	if path == "" {
		return kindSQLite, "", errors.New("sqlite ledger: empty path")
	}
	return kindSQLite, path, nil
}

// CheckURL returns the error Open would return for rawURL before it opens
// anything (an unknown scheme, a malformed Redis URL, an empty path), or
// nil: what `harness check` holds the configured ledger to.
func CheckURL(rawURL string) error {
	_, _, err := parseURL(rawURL)
	return err
}

// Open opens the store a URL names:
//
//	memory:                         in this process only (tests, short runs)
//	sqlite:PATH, sqlite://PATH      an embedded SQLite file (created if needed)
//	PATH                            the same
//	redis://[user:password@]host:port/db, rediss://...   a Redis server
//	redis+cluster://[user:password@]host:port,host:port,...   a Redis Cluster, by some of its nodes
//	redis+sentinel://[user:password@]host:port,.../master[/db]   the master that Sentinels name
//
// (rediss+cluster:// and rediss+sentinel:// over TLS; see the Redis store
// for the options a Redis URL takes).
func Open(ctx context.Context, rawURL string, opts Options) (Store, error) {
	k, path, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var s Store
	switch k {
	case kindMemory:
		s = NewMemory()
	case kindRedis:
		s, err = OpenRedis(ctx, rawURL, opts)
	case kindSQLite:
		if _, statErr := os.Stat(path); opts.ReadOnly && errors.Is(statErr, fs.ErrNotExist) {
			s = NewMemory() // nothing to read, and nothing is created
		} else {
			s, err = OpenSQLite(ctx, path)
		}
	}
	if err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		s = readOnly{s}
	}
	return s, nil
}

// DefaultPath is the embedded ledger's file in the user's state directory:
// $XDG_STATE_HOME/lean-ctx/harness/ledger.db, with ~/.local/state for an
// unset XDG_STATE_HOME.
func DefaultPath(getenv func(string) string, home string) string {
	state := getenv("XDG_STATE_HOME")
	if state == "" {
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "lean-ctx", "harness", "ledger.db")
}

func ensureDir(path string) error {
	return os.MkdirAll(filepath.Dir(path), 0o700)
}

// sortSessions orders sessions by their last change, the latest first, then
// by agent and id.
func sortSessions(list []Session) {
	slices.SortFunc(list, func(a, b Session) int {
		return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Session, b.Session))
	})
}
