package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stores opens a fresh store of every kind. Redis stores get a key prefix
// of their own, so tests never share sessions.
func stores(t testing.TB) map[string]Store {
	t.Helper()
	ctx := context.Background()
	sq, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := OpenRedis(ctx, redisURL(t), Options{Prefix: fmt.Sprintf("test:%s:%d:", t.Name(), time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]Store{"memory": NewMemory(), "sqlite": sq, "redis": rd}
	t.Cleanup(func() {
		for _, s := range all {
			s.Close()
		}
	})
	return all
}

// eachStore runs check on a fresh store of every kind, in parallel.
func eachStore(t *testing.T, check func(t *testing.T, s Store)) {
	t.Parallel()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, s)
		})
	}
}

// contract are the checks every store passes: run on each kind of store
// by the tests of their names, and on a Redis Cluster and Sentinels by
// the tests of those.
var contract = []struct {
	name  string
	check func(t *testing.T, s Store)
}{
	{"StoreContract", checkStoreContract},
	{"Sessions", checkSessions},
	{"ReserveShellRace", checkReserveShellRace},
	{"AgentPeriods", checkAgentPeriods},
	{"PinProject", checkPinProject},
	{"AgentShellRace", checkAgentShellRace},
}

func TestStoreContract(t *testing.T) { eachStore(t, checkStoreContract) }

func checkStoreContract(t *testing.T, s Store) {
	ctx := context.Background()
	k := Key{Agent: "claude-code", Session: "s-1"}
	if c, err := s.Get(ctx, k, ""); err != nil || c != (Counters{}) {
		t.Fatalf("new session: %+v, %v", c, err)
	}
	c, err := s.InitRole(ctx, k, "reviewer")
	if err != nil || c.Role != "reviewer" {
		t.Fatalf("InitRole: %+v, %v", c, err)
	}
	if c, _ := s.InitRole(ctx, k, "admin"); c.Role != "reviewer" {
		t.Errorf("InitRole replaced an existing role: %+v", c)
	}
	// A reservation against stale counters fails and changes nothing.
	if c, ok, err := s.ReserveShell(ctx, k, "", Counters{Shell: 3, Role: "reviewer"}); err != nil || ok || c.Shell != 0 {
		t.Errorf("stale shell count: %+v ok=%v %v", c, ok, err)
	}
	if c, ok, _ := s.ReserveShell(ctx, k, "", Counters{Shell: 0, Role: "coder"}); ok || c.Shell != 0 {
		t.Errorf("stale role: %+v ok=%v", c, ok)
	}
	c, ok, err := s.ReserveShell(ctx, k, "", Counters{Shell: 0, Role: "reviewer"})
	if err != nil || !ok || c.Shell != 1 {
		t.Fatalf("reserve: %+v ok=%v %v", c, ok, err)
	}
	if c, err = s.AddShell(ctx, k, ""); err != nil || c.Shell != 2 {
		t.Fatalf("AddShell: %+v, %v", c, err)
	}
	if c, err = s.Charge(ctx, k, "", 1500, 2_500_000); err != nil || c.Tokens != 1500 || c.CostMicros != 2_500_000 {
		t.Fatalf("charge: %+v, %v", c, err)
	}
	if c, _ = s.Charge(ctx, k, "", 1, 1); c.Tokens != 1501 || c.CostMicros != 2_500_001 || c.Shell != 2 || c.Role != "reviewer" {
		t.Errorf("second charge: %+v", c)
	}
	if _, err := s.Charge(ctx, k, "", -1, 0); err == nil {
		t.Error("a negative charge was accepted")
	}
	// Another session and another agent are separate.
	for _, other := range []Key{{Agent: "claude-code", Session: "s-2"}, {Agent: "cursor", Session: "s-1"}} {
		if c, _ := s.Get(ctx, other, ""); c != (Counters{}) {
			t.Errorf("%v shares counters with %v: %+v", other, k, c)
		}
	}
	if c, err = s.SetRole(ctx, k, "coder"); err != nil || c.Role != "coder" || c.Tokens != 1501 {
		t.Errorf("SetRole must keep usage: %+v, %v", c, err)
	}
	if c, ok, err := s.SwitchRole(ctx, k, "reviewer", "debugger"); err != nil || ok || c.Role != "coder" {
		t.Errorf("a switch from a stale role: %+v ok=%v %v", c, ok, err)
	}
	if c, ok, err := s.SwitchRole(ctx, k, "coder", "debugger"); err != nil || !ok || c.Role != "debugger" || c.Tokens != 1501 || c.Shell != 2 {
		t.Errorf("a switch must keep usage: %+v ok=%v %v", c, ok, err)
	}
	if c, ok, _ := s.SwitchRole(ctx, Key{Session: "nobody-yet"}, "coder", "reviewer"); ok || c.Role != "" {
		t.Errorf("a switch of a session without a role: %+v", c)
	}
	if _, err = s.SetRole(ctx, k, "coder"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, k); err != nil {
		t.Fatal(err)
	}
	if c, _ = s.Get(ctx, k, ""); c != (Counters{Role: "coder"}) {
		t.Errorf("after reset: %+v", c)
	}
	if _, err := s.Get(ctx, Key{}, ""); err == nil {
		t.Error("an empty session id was accepted")
	}
}

// Sessions are found, not invented: reading or resetting a session the
// store does not have creates none, every store lists what it has, the
// latest change first, and finds a session id under every agent.
func TestSessions(t *testing.T) { eachStore(t, checkSessions) }

func checkSessions(t *testing.T, s Store) {
	ctx := context.Background()
	ghost := Key{Agent: "a", Session: "ghost"}
	if _, err := s.Get(ctx, ghost, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, ghost); !errors.Is(err, ErrNoSession) {
		t.Errorf("reset of a session the store does not have: %v", err)
	}
	if _, ok, _ := s.SwitchRole(ctx, ghost, "coder", "admin"); ok {
		t.Error("a switch from a role the session does not have")
	}
	if list, err := s.Sessions(ctx, ""); err != nil || len(list) != 0 {
		t.Fatalf("sessions before any change: %+v, %v", list, err)
	}
	start := time.Now().Truncate(time.Second)
	odd := Key{Agent: "b*/x", Session: "s 1/[2]?"}
	for _, step := range []func() (Counters, error){
		func() (Counters, error) { return s.InitRole(ctx, Key{Agent: "a", Session: "s1"}, "coder") },
		func() (Counters, error) { return s.Charge(ctx, Key{Agent: "b", Session: "s1"}, "", 5, 7) },
		func() (Counters, error) { return s.AddShell(ctx, odd, "") },
		func() (Counters, error) { return s.SetRole(ctx, Key{Session: "s2"}, "reviewer") },
	} {
		if _, err := step(); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[Key]Session{}
	for _, x := range list {
		got[x.Key] = x
		if x.Updated.Before(start) || x.Updated.After(time.Now()) {
			t.Errorf("%v: updated %v, not during the test (from %v)", x.Key, x.Updated, start)
		}
	}
	if len(list) != 4 || got[Key{Agent: "b", Session: "s1"}].Tokens != 5 || got[Key{Agent: "b", Session: "s1"}].CostMicros != 7 ||
		got[odd].Shell != 1 || got[Key{Session: "s2"}].Role != "reviewer" || got[Key{Agent: "a", Session: "s1"}].Role != "coder" {
		t.Errorf("sessions: %+v", list)
	}
	for i := 1; i < len(list); i++ {
		if list[i].Updated.After(list[i-1].Updated) {
			t.Errorf("not the latest first: %+v", list)
		}
	}
	for _, tt := range []struct {
		session string
		want    []Key
	}{
		{"s1", []Key{{Agent: "a", Session: "s1"}, {Agent: "b", Session: "s1"}}},
		{"s 1/[2]?", []Key{odd}},
		{"s*", nil},
		{"nobody", nil},
	} {
		found, err := s.Sessions(ctx, tt.session)
		var keys []Key
		for _, x := range found {
			keys = append(keys, x.Key)
		}
		slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.Agent, b.Agent) })
		if err != nil || !slices.Equal(keys, tt.want) {
			t.Errorf("sessions %q: %v, %v; want %v", tt.session, keys, err, tt.want)
		}
	}
	if err := s.Reset(ctx, odd); err != nil {
		t.Errorf("reset of a session the store has: %v", err)
	}
}

// Racing goroutines take exactly the free slots: each reads, checks the
// limit and reserves against what it read, retrying on conflict.
func TestReserveShellRace(t *testing.T) { eachStore(t, checkReserveShellRace) }

func checkReserveShellRace(t *testing.T, s Store) {
	ctx := context.Background()
	k := Key{Session: "race"}
	const limit, used = 100, 95
	for range used {
		if _, err := s.AddShell(ctx, k, ""); err != nil {
			t.Fatal(err)
		}
	}
	var granted, conflicts atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			c, err := s.Get(ctx, k, "")
			for err == nil && c.Shell < limit {
				var ok bool
				if c, ok, err = s.ReserveShell(ctx, k, "", c); ok {
					granted.Add(1)
					return
				}
				conflicts.Add(1)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if c, _ := s.Get(ctx, k, ""); granted.Load() != limit-used || c.Shell != limit {
		t.Errorf("granted %d (want %d), shell count %d (want %d)", granted.Load(), limit-used, c.Shell, limit)
	}
	t.Logf("%d conflicts retried", conflicts.Load())
}

func TestSQLiteSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "ledger.db")
	k := Key{Agent: "a", Session: "s"}
	for i := range 3 {
		s, err := Open(ctx, "sqlite:"+path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Charge(ctx, k, "", 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(10 * (i + 1)); c.Tokens != want {
			t.Errorf("run %d: tokens %d, want %d (counters lost on restart)", i, c.Tokens, want)
		}
		s.Close()
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	for _, tt := range []struct {
		url  string
		want string // type name, or "error"
	}{
		{"memory:", "*budget.Memory"},
		{"sqlite:" + filepath.Join(dir, "a.db"), "*budget.SQLite"},
		{"sqlite://" + filepath.Join(dir, "b.db"), "*budget.SQLite"},
		{filepath.Join(dir, "c.db"), "*budget.SQLite"},
		{redisURL(t), "*budget.Redis"},
		{"postgres://localhost/x", "error"},
		{"", "error"},
		{"redis://127.0.0.1:1/0", "error"}, // nothing listens there
		{"redis+cluster://127.0.0.1:1,127.0.0.1:2", "error"},
		{"redis+sentinel://127.0.0.1:1/ledger", "error"},
		{"redis+shard://127.0.0.1:1", "error"},
	} {
		s, err := Open(ctx, tt.url, Options{Timeout: 300 * time.Millisecond})
		got := "error"
		if err == nil {
			got = fmt.Sprintf("%T", s)
			s.Close()
		}
		if got != tt.want {
			t.Errorf("Open(%q) = %s (%v), want %s", tt.url, got, err, tt.want)
		}
	}
}

func TestRedisTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := fmt.Sprintf("ttl-test:%d:", time.Now().UnixNano())
	s, err := OpenRedis(ctx, redisURL(t), Options{Prefix: prefix, TTL: 100 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := Key{Session: fmt.Sprint(time.Now().UnixNano())}
	if _, err := s.Charge(ctx, k, "", 1, 1); err != nil {
		t.Fatal(err)
	}
	ttl, err := s.client.TTL(ctx, s.key(k)).Result()
	if err != nil || ttl <= 90*time.Second || ttl > 100*time.Second {
		t.Errorf("TTL %v, %v; want about 100s", ttl, err)
	}
	if keys, _ := s.client.Keys(ctx, prefix+"*").Result(); len(keys) != 1 {
		t.Errorf("keys under the prefix: %v", keys)
	}
	// An agent's counters of a period expire, but not before the period
	// is over (32 days after their last change, whatever the TTL); those
	// of "total" never do.
	for period, expires := range map[Period]bool{"day:2026-12-01": true, "total": false} {
		a := Key{Agent: "claude-code", Session: period}
		if _, err := s.Charge(ctx, a, period, 1, 1); err != nil {
			t.Fatal(err)
		}
		ttl, err := s.client.TTL(ctx, s.agentKey(a.Agent, period)).Result()
		if err != nil || expires != (ttl > 32*24*time.Hour-10*time.Second && ttl <= 32*24*time.Hour) || !expires && ttl != -1 {
			t.Errorf("TTL of the agent's %s counters: %v, %v", period, ttl, err)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	if got := DefaultPath(func(k string) string { return env[k] }, "/home/u"); got != "/home/u/.local/state/lean-ctx/harness/ledger.db" {
		t.Errorf("default path %s", got)
	}
	env["XDG_STATE_HOME"] = "/state"
	if got := DefaultPath(func(k string) string { return env[k] }, "/home/u"); got != "/state/lean-ctx/harness/ledger.db" {
		t.Errorf("XDG path %s", got)
	}
}

// A key's string is the key's alone: read back, it gives the key it was
// written from, so no two keys write the same string.
func TestKeyString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		k    Key
		want string
	}{
		{Key{Session: "s"}, "s"},
		{Key{Agent: "ci", Session: "S"}, "ci/S"},
		{Key{Session: "ci/S"}, "/ci/S"},
		{Key{Agent: "ci", Session: "a/b"}, "ci/a/b"},
		{Key{Agent: "a/b", Session: "c"}, "a%2Fb/c"},
		{Key{Agent: "a%2Fb", Session: "c"}, "a%252Fb/c"},
		{Key{Agent: "50%", Session: "/"}, "50%25//"},
	} {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("%#v: %q, want %q", tt.k, got, tt.want)
		}
		if back := readKeyString(tt.want); back != tt.k {
			t.Errorf("%q read back as %#v, want %#v", tt.want, back, tt.k)
		}
	}
}

// FuzzKeyString reads back the string of any valid key.
func FuzzKeyString(f *testing.F) {
	f.Add("ci", "S")
	f.Add("", "ci/S")
	f.Add("a/b", "c")
	f.Add("a%2F", "%")
	f.Fuzz(func(t *testing.T, agent, session string) {
		k := Key{Agent: agent, Session: session}
		if k.Validate() != nil {
			return
		}
		if back := readKeyString(k.String()); back != k {
			t.Fatalf("%#v wrote %q, read back as %#v", k, k.String(), back)
		}
	})
}

// readKeyString is String's inverse, for the tests: no agent when there is
// no '/', or the string starts with one; else the agent, unescaped, before
// the first '/'.
func readKeyString(s string) Key {
	if !strings.Contains(s, "/") {
		return Key{Session: s}
	}
	if rest, ok := strings.CutPrefix(s, "/"); ok {
		return Key{Session: rest}
	}
	agent, session, _ := strings.Cut(s, "/")
	return Key{Agent: strings.NewReplacer("%2F", "/", "%25", "%").Replace(agent), Session: session}
}

// Keys that cannot be stored safely, or shown safely on a terminal, are
// refused by every store.
func TestKeyValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		k    Key
		want bool
	}{
		{Key{Session: "s-1"}, true},
		{Key{Agent: "claude-code", Session: "00893aaf-19fa-41d2-8238-13269b9b3ca0"}, true},
		{Key{Session: "a session with spaces/and slashes"}, true},
		{Key{Session: "café"}, true},
		{Key{}, false},
		{Key{Session: strings.Repeat("x", 257)}, false},
		{Key{Session: "a\nb"}, false},
		{Key{Session: "a\tb"}, false},
		{Key{Session: "\x1b]0;owned\x07"}, false},
		{Key{Agent: "\x1b[2J", Session: "s"}, false},
		{Key{Session: "\u0085"}, false},
		{Key{Session: "\xff"}, false},
	} {
		if err := tt.k.Validate(); (err == nil) != tt.want {
			t.Errorf("%q: %v, want valid %v", tt.k, err, tt.want)
		}
	}
	for name, s := range stores(t) {
		if _, err := s.Charge(context.Background(), Key{Session: "\x1b[2J"}, "", 1, 1); err == nil {
			t.Errorf("%s stored a session id with an escape sequence", name)
		}
	}
}

// An agent's counters of a period go with every session of the agent: a
// charge or a shell slot counts against both at once, reads see both, a
// stale agent count loses a reservation, and other periods and agents are
// apart.
func TestAgentPeriods(t *testing.T) { eachStore(t, checkAgentPeriods) }

func checkAgentPeriods(t *testing.T, s Store) {
	ctx := context.Background()
	const day = "day:2026-12-01"
	k1, k2 := Key{Agent: "claude-code", Session: "s-1"}, Key{Agent: "claude-code", Session: "s-2"}
	if _, err := s.InitRole(ctx, k1, "coder"); err != nil {
		t.Fatal(err)
	}
	c, err := s.Charge(ctx, k1, day, 100, 7)
	if err != nil || c.Tokens != 100 || c.AgentUsage != (Usage{Tokens: 100, CostMicros: 7}) || c.Role != "coder" {
		t.Fatalf("charge with a period: %+v, %v", c, err)
	}
	if c, err = s.Charge(ctx, k2, day, 5, 1); err != nil || c.Tokens != 5 || c.AgentUsage != (Usage{Tokens: 105, CostMicros: 8}) {
		t.Fatalf("a second session of the agent: %+v, %v", c, err)
	}
	if c, _ = s.Charge(ctx, k2, "", 1, 1); c.Tokens != 6 || c.AgentUsage != (Usage{}) {
		t.Errorf("a charge without a period: %+v", c)
	}
	if c, _ := s.Get(ctx, k1, day); c.Tokens != 100 || c.AgentUsage.Tokens != 105 {
		t.Errorf("get: %+v", c)
	}
	for _, other := range []struct {
		k      Key
		period Period
	}{{k1, "day:2026-12-02"}, {Key{Agent: "cursor", Session: "s-1"}, day}, {k1, "total"}} {
		if c, _ := s.Get(ctx, other.k, other.period); c.AgentUsage != (Usage{}) {
			t.Errorf("%v %s shares the agent's counters: %+v", other.k, other.period, c)
		}
	}
	// A reservation decided on a stale agent count changes nothing.
	cur, _ := s.Get(ctx, k1, day)
	if _, err := s.AddShell(ctx, k2, day); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := s.ReserveShell(ctx, k1, day, cur); err != nil || ok || c.Shell != 0 || c.AgentUsage.Shell != 1 {
		t.Errorf("a stale agent count reserved: %+v ok=%v %v", c, ok, err)
	}
	cur, _ = s.Get(ctx, k1, day)
	if c, ok, err := s.ReserveShell(ctx, k1, day, cur); err != nil || !ok || c.Shell != 1 || c.AgentUsage.Shell != 2 {
		t.Errorf("reserve: %+v ok=%v %v", c, ok, err)
	}
	// A new agent period starts at zero.
	if c, ok, err := s.ReserveShell(ctx, k1, "week:2026-W49", Counters{Shell: 1, Role: "coder"}); err != nil || !ok || c.AgentUsage.Shell != 1 {
		t.Errorf("reserve in a new period: %+v ok=%v %v", c, ok, err)
	}
	// Resetting a session leaves its agent's counters; only the
	// operator's agent reset lowers them.
	if err := s.Reset(ctx, k1); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Get(ctx, k1, day); c.Tokens != 0 || c.AgentUsage.Tokens != 105 {
		t.Errorf("a session's reset touched its agent's counters: %+v", c)
	}
	if err := s.ResetAgent(ctx, "claude-code", day); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Get(ctx, k2, day); c.AgentUsage != (Usage{}) || c.Tokens != 6 {
		t.Errorf("after the agent's reset: %+v", c)
	}
	if err := s.ResetAgent(ctx, "nobody", day); !errors.Is(err, ErrNoSession) {
		t.Errorf("reset of an agent without counters: %v", err)
	}
	if _, err := s.Charge(ctx, k1, "day\n", 1, 1); err == nil {
		t.Error("a period with a control character was accepted")
	}
}

// A session's project is pinned by its first call and never changes.
func TestPinProject(t *testing.T) { eachStore(t, checkPinProject) }

func checkPinProject(t *testing.T, s Store) {
	ctx := context.Background()
	k := Key{Agent: "claude-code", Session: "pin"}
	if c, err := s.PinProject(ctx, k, "/src/app"); err != nil || c.Project != "/src/app" {
		t.Fatalf("pin: %+v, %v", c, err)
	}
	if c, err := s.PinProject(ctx, k, "/elsewhere"); err != nil || c.Project != "/src/app" {
		t.Errorf("a pinned project changed: %+v, %v", c, err)
	}
	if _, err := s.Charge(ctx, k, "", 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, k); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Get(ctx, k, ""); c.Project != "/src/app" {
		t.Errorf("after a reset: %+v", c)
	}
	list, _ := s.Sessions(ctx, "pin")
	if len(list) != 1 || list[0].Project != "/src/app" {
		t.Errorf("sessions: %+v", list)
	}
}

// Sessions of one agent racing for the agent's last shell slots get
// exactly the free ones, across sessions.
func TestAgentShellRace(t *testing.T) { eachStore(t, checkAgentShellRace) }

func checkAgentShellRace(t *testing.T, s Store) {
	ctx := context.Background()
	const limit, period = 20, "total"
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			k := Key{Agent: "racer", Session: fmt.Sprintf("s-%d", i%8)}
			c, err := s.Get(ctx, k, period)
			for err == nil && c.AgentUsage.Shell < limit {
				var ok bool
				if c, ok, err = s.ReserveShell(ctx, k, period, c); ok {
					granted.Add(1)
					return
				}
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c, _ := s.Get(ctx, Key{Agent: "racer", Session: "s-0"}, period)
	if granted.Load() != limit || c.AgentUsage.Shell != limit {
		t.Errorf("granted %d, agent shell count %d; want %d", granted.Load(), c.AgentUsage.Shell, limit)
	}
}

// A ledger file written before sessions had a project opens, keeps its
// counters and pins projects.
func TestSQLiteMigratesProject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`CREATE TABLE sessions (agent TEXT NOT NULL, session TEXT NOT NULL, tokens INTEGER NOT NULL DEFAULT 0,
		shell INTEGER NOT NULL DEFAULT 0, cost_micros INTEGER NOT NULL DEFAULT 0, role TEXT NOT NULL DEFAULT '',
		updated_at INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (agent, session)) WITHOUT ROWID;
		INSERT INTO sessions (agent, session, tokens, role) VALUES ('a', 's', 42, 'coder')`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := Key{Agent: "a", Session: "s"}
	if c, err := s.PinProject(ctx, k, "/p"); err != nil || c != (Counters{Tokens: 42, Role: "coder", Project: "/p"}) {
		t.Errorf("after migration: %+v, %v", c, err)
	}
}

// A charge worked out against counters that changed since is refused and
// changes nothing; against the same counters it is made, on the session
// and its agent's period at once. A shell slot given back lowers both
// counts, never below 0, and a session the store does not have has none.
func TestChargeIfAndReleaseShell(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const day = "day:2026-12-01"
			k := Key{Agent: "a", Session: "s"}
			c, ok, err := s.ChargeIf(ctx, k, day, Counters{}, 10, 5)
			if err != nil || !ok || c.Tokens != 10 || c.AgentUsage != (Usage{Tokens: 10, CostMicros: 5}) {
				t.Fatalf("a first charge: %+v ok=%v %v", c, ok, err)
			}
			if c, ok, _ := s.ChargeIf(ctx, k, day, Counters{}, 1, 1); ok || c.Tokens != 10 {
				t.Errorf("a charge against stale counters: %+v ok=%v", c, ok)
			}
			other := Key{Agent: "a", Session: "t"}
			if _, err := s.Charge(ctx, other, day, 3, 0); err != nil {
				t.Fatal(err)
			}
			cur, _ := s.Get(ctx, k, day)
			stale := cur
			stale.AgentUsage.Tokens -= 3 // what it was before the other session's charge
			if _, ok, _ := s.ChargeIf(ctx, k, day, stale, 1, 1); ok {
				t.Error("a charge against a stale agent count")
			}
			if c, ok, _ := s.ChargeIf(ctx, k, day, cur, 2, 1); !ok || c.Tokens != 12 || c.AgentUsage.Tokens != 15 {
				t.Errorf("a charge against the current counters: %+v ok=%v", c, ok)
			}
			if _, _, err := s.ChargeIf(ctx, k, day, cur, -1, 0); err == nil {
				t.Error("a negative charge was accepted")
			}
			if _, err := s.AddShell(ctx, k, day); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := s.ReleaseShell(ctx, k, day); err != nil {
					t.Fatal(err)
				}
			}
			if c, _ := s.Get(ctx, k, day); c.Shell != 0 || c.AgentUsage.Shell != 0 {
				t.Errorf("after giving back more than was taken: %+v", c)
			}
			if _, err := s.ReleaseShell(ctx, Key{Session: "ghost"}, ""); !errors.Is(err, ErrNoSession) {
				t.Errorf("a session the store does not have: %v", err)
			}
		})
	}
}
