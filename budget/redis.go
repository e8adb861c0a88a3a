package budget

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a store shared by every gateway, hook and CLI that points at the
// same server: budgets that hold across processes and machines. Each
// session is one hash (tokens, shell, cost, role, updated); every change is
// one Lua script, so the check and the change happen atomically on the
// server.
type Redis struct {
	client *redis.Client
	prefix string
	ttl    time.Duration
	now    func() time.Time
}

// OpenRedis connects to the server of a redis:// or rediss:// URL and
// checks that it answers.
func OpenRedis(ctx context.Context, rawURL string, opts Options) (*Redis, error) {
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis ledger: %w", err)
	}
	r := &Redis{client: redis.NewClient(o), prefix: opts.Prefix, ttl: opts.TTL, now: time.Now}
	if r.prefix == "" {
		r.prefix = DefaultPrefix
	}
	if err := r.client.Ping(ctx).Err(); err != nil {
		r.client.Close()
		return nil, fmt.Errorf("redis ledger %s: %w", o.Addr, err)
	}
	return r, nil
}

// keyspace is the start of every session's key.
func (r *Redis) keyspace() string { return r.prefix + "session:" }

func (r *Redis) key(k Key) string {
	return r.keyspace() + url.PathEscape(k.Agent) + "/" + url.PathEscape(k.Session)
}

// Every change ends by stamping the time of the change (ARGV[2], Unix
// seconds), refreshing the TTL (ARGV[1], seconds; 0 keeps the key) and
// returning the counters. A script's own arguments start at ARGV[3].
const luaTail = `
redis.call('HSET', KEYS[1], 'updated', ARGV[2])
local ttl = tonumber(ARGV[1])
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
return redis.call('HMGET', KEYS[1], 'tokens', 'shell', 'cost', 'role')
`

// luaConflict returns the current counters, marked: the change was not
// made.
const luaConflict = `
	local cur = redis.call('HMGET', KEYS[1], 'tokens', 'shell', 'cost', 'role')
	table.insert(cur, 'conflict')
	return cur`

var (
	scriptInitRole = redis.NewScript(`
local role = redis.call('HGET', KEYS[1], 'role')
if not role or role == '' then redis.call('HSET', KEYS[1], 'role', ARGV[3]) end` + luaTail)

	scriptSetRole = redis.NewScript(`redis.call('HSET', KEYS[1], 'role', ARGV[3])` + luaTail)

	// ARGV[3], ARGV[4]: the expected shell count and role. A mismatch
	// returns the current counters and changes nothing.
	scriptReserve = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'shell', 'role')
if tonumber(v[1] or '0') ~= tonumber(ARGV[3]) or (v[2] or '') ~= ARGV[4] then` + luaConflict + `
end
redis.call('HINCRBY', KEYS[1], 'shell', 1)` + luaTail)

	// ARGV[3], ARGV[4]: the expected role and the new one.
	scriptSwitchRole = redis.NewScript(`
local role = redis.call('HGET', KEYS[1], 'role') or ''
if role ~= ARGV[3] then` + luaConflict + `
end
redis.call('HSET', KEYS[1], 'role', ARGV[4])` + luaTail)

	scriptAddShell = redis.NewScript(`redis.call('HINCRBY', KEYS[1], 'shell', 1)` + luaTail)

	scriptCharge = redis.NewScript(`
redis.call('HINCRBY', KEYS[1], 'tokens', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'cost', ARGV[4])` + luaTail)

	// A session the store does not have is not created by a reset.
	scriptReset = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then` + luaConflict + `
end
redis.call('HSET', KEYS[1], 'tokens', 0, 'shell', 0, 'cost', 0)` + luaTail)
)

// run runs a script on the session's key and reads the counters it returns;
// ok is false when the script reported a conflict.
func (r *Redis) run(ctx context.Context, k Key, s *redis.Script, args ...any) (Counters, bool, error) {
	if err := k.Validate(); err != nil {
		return Counters{}, false, err
	}
	argv := append([]any{int64(r.ttl / time.Second), r.now().Unix()}, args...)
	res, err := s.Run(ctx, r.client, []string{r.key(k)}, argv...).Slice()
	if err != nil {
		return Counters{}, false, fmt.Errorf("redis ledger: %w", err)
	}
	c, err := countersFrom(res)
	return c, len(res) == 4, err
}

func countersFrom(v []any) (Counters, error) {
	if len(v) < 4 {
		return Counters{}, fmt.Errorf("redis ledger: unexpected reply %v", v)
	}
	var c Counters
	for i, dst := range []*int64{&c.Tokens, &c.Shell, &c.CostMicros} {
		if v[i] == nil {
			continue
		}
		s, _ := v[i].(string)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Counters{}, fmt.Errorf("redis ledger: counter %q: %w", s, err)
		}
		*dst = n
	}
	c.Role, _ = v[3].(string)
	return c, nil
}

func (r *Redis) Get(ctx context.Context, k Key) (Counters, error) {
	if err := k.Validate(); err != nil {
		return Counters{}, err
	}
	res, err := r.client.HMGet(ctx, r.key(k), "tokens", "shell", "cost", "role").Result()
	if err != nil {
		return Counters{}, fmt.Errorf("redis ledger: %w", err)
	}
	return countersFrom(res)
}

func (r *Redis) InitRole(ctx context.Context, k Key, role string) (Counters, error) {
	c, _, err := r.run(ctx, k, scriptInitRole, role)
	return c, err
}

func (r *Redis) SetRole(ctx context.Context, k Key, role string) (Counters, error) {
	c, _, err := r.run(ctx, k, scriptSetRole, role)
	return c, err
}

func (r *Redis) SwitchRole(ctx context.Context, k Key, from, to string) (Counters, bool, error) {
	return r.run(ctx, k, scriptSwitchRole, from, to)
}

func (r *Redis) ReserveShell(ctx context.Context, k Key, expected Counters) (Counters, bool, error) {
	return r.run(ctx, k, scriptReserve, expected.Shell, expected.Role)
}

func (r *Redis) AddShell(ctx context.Context, k Key) (Counters, error) {
	c, _, err := r.run(ctx, k, scriptAddShell)
	return c, err
}

func (r *Redis) Charge(ctx context.Context, k Key, tokens, cost int64) (Counters, error) {
	if err := checkCharge(tokens, cost); err != nil {
		return Counters{}, err
	}
	c, _, err := r.run(ctx, k, scriptCharge, tokens, cost)
	return c, err
}

func (r *Redis) Reset(ctx context.Context, k Key) error {
	_, ok, err := r.run(ctx, k, scriptReset)
	if err == nil && !ok {
		return ErrNoSession
	}
	return err
}

// Sessions scans the keyspace (a session id given matches one key per
// agent) and reads each session's hash.
func (r *Redis) Sessions(ctx context.Context, session string) ([]Session, error) {
	match := globEscape(r.keyspace()) + "*"
	if session != "" {
		match += "/" + globEscape(url.PathEscape(session))
	}
	var out []Session
	iter := r.client.Scan(ctx, 0, match, 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		agent, id, ok := strings.Cut(strings.TrimPrefix(key, r.keyspace()), "/")
		if !ok {
			continue
		}
		var x Session
		var err1, err2 error
		x.Agent, err1 = url.PathUnescape(agent)
		x.Session, err2 = url.PathUnescape(id)
		if err1 != nil || err2 != nil {
			continue // not a key of this store's making
		}
		v, err := r.client.HMGet(ctx, key, "tokens", "shell", "cost", "role", "updated").Result()
		if err != nil {
			return nil, fmt.Errorf("redis ledger: %w", err)
		}
		if !slices.ContainsFunc(v, func(x any) bool { return x != nil }) {
			continue // expired since the scan
		}
		if x.Counters, err = countersFrom(v); err != nil {
			return nil, err
		}
		if s, _ := v[4].(string); s != "" {
			if t, err := strconv.ParseInt(s, 10, 64); err == nil {
				x.Updated = time.Unix(t, 0)
			}
		}
		out = append(out, x)
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redis ledger: %w", err)
	}
	sortSessions(out)
	return out, nil
}

// globEscape escapes what SCAN's MATCH reads as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (r *Redis) Close() error { return r.client.Close() }
