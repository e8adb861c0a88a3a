package budget

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a store shared by every gateway, hook and CLI that points at the
// same server: budgets that hold across processes and machines. Each
// session is one hash (tokens, shell, cost, role); every change is one Lua
// script, so the check and the change happen atomically on the server.
type Redis struct {
	client *redis.Client
	prefix string
	ttl    time.Duration
}

// OpenRedis connects to the server of a redis:// or rediss:// URL and
// checks that it answers.
func OpenRedis(ctx context.Context, rawURL string, opts Options) (*Redis, error) {
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis ledger: %w", err)
	}
	r := &Redis{client: redis.NewClient(o), prefix: opts.Prefix, ttl: opts.TTL}
	if r.prefix == "" {
		r.prefix = DefaultPrefix
	}
	if err := r.client.Ping(ctx).Err(); err != nil {
		r.client.Close()
		return nil, fmt.Errorf("redis ledger %s: %w", o.Addr, err)
	}
	return r, nil
}

func (r *Redis) key(k Key) string {
	return r.prefix + "session:" + url.PathEscape(k.Agent) + "/" + url.PathEscape(k.Session)
}

// Every script ends by refreshing the TTL (ARGV[1], seconds; 0 keeps the
// key) and returning the counters.
const luaTail = `
local ttl = tonumber(ARGV[1])
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
return redis.call('HMGET', KEYS[1], 'tokens', 'shell', 'cost', 'role')
`

var (
	scriptInitRole = redis.NewScript(`
local role = redis.call('HGET', KEYS[1], 'role')
if not role or role == '' then redis.call('HSET', KEYS[1], 'role', ARGV[2]) end` + luaTail)

	scriptSetRole = redis.NewScript(`redis.call('HSET', KEYS[1], 'role', ARGV[2])` + luaTail)

	// ARGV[2], ARGV[3]: the expected shell count and role. A mismatch
	// returns the current counters and changes nothing.
	scriptReserve = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'shell', 'role')
if tonumber(v[1] or '0') ~= tonumber(ARGV[2]) or (v[2] or '') ~= ARGV[3] then
	local cur = redis.call('HMGET', KEYS[1], 'tokens', 'shell', 'cost', 'role')
	table.insert(cur, 'conflict')
	return cur
end
redis.call('HINCRBY', KEYS[1], 'shell', 1)` + luaTail)

	// ARGV[2], ARGV[3]: the expected role and the new one.
	scriptSwitchRole = redis.NewScript(`
local role = redis.call('HGET', KEYS[1], 'role') or ''
if role ~= ARGV[2] then
	local cur = redis.call('HMGET', KEYS[1], 'tokens', 'shell', 'cost', 'role')
	table.insert(cur, 'conflict')
	return cur
end
redis.call('HSET', KEYS[1], 'role', ARGV[3])` + luaTail)

	scriptAddShell = redis.NewScript(`redis.call('HINCRBY', KEYS[1], 'shell', 1)` + luaTail)

	scriptCharge = redis.NewScript(`
redis.call('HINCRBY', KEYS[1], 'tokens', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'cost', ARGV[3])` + luaTail)

	scriptReset = redis.NewScript(`redis.call('HSET', KEYS[1], 'tokens', 0, 'shell', 0, 'cost', 0)` + luaTail)
)

// run runs a script on the session's key and reads the counters it returns;
// ok is false when the script reported a conflict.
func (r *Redis) run(ctx context.Context, k Key, s *redis.Script, args ...any) (Counters, bool, error) {
	if err := k.Validate(); err != nil {
		return Counters{}, false, err
	}
	res, err := s.Run(ctx, r.client, []string{r.key(k)}, append([]any{int64(r.ttl / time.Second)}, args...)...).Slice()
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
	_, _, err := r.run(ctx, k, scriptReset)
	return err
}

func (r *Redis) Close() error { return r.client.Close() }
