package budget

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a store shared by every gateway, hook and CLI that points at the
// same server, Redis Cluster or Sentinel-watched master: budgets that hold
// across processes and machines. Each session is one hash (tokens, shell,
// cost, role, project, updated), and so is each budget period of an agent;
// every change is one Lua script, so the check and the change happen
// atomically on the server, and the keys of an agent share a hash tag, so
// that every script touches one slot of a cluster.
type Redis struct {
	client  redis.UniversalClient
	prefix  string
	ttl     time.Duration
	timeout time.Duration
	// replicas must have a change before it is confirmed (0: none).
	replicas int
	where    string // the servers, for errors
	now      func() time.Time
	// batch sends concurrent changes together (without replicas to
	// wait for).
	batch *batcher
}

// OpenRedis connects to the Redis ledger of a URL (see [Open]) and checks
// that it answers.
func OpenRedis(ctx context.Context, rawURL string, opts Options) (*Redis, error) {
	o, where, err := redisOptions(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis ledger: %w", err)
	}
	// A command whose reply is lost (the server died after running it, the
	// connection broke) is never sent again: a script sent again would add
	// its charge or take its shell slot twice, or, being a compare-and-swap,
	// find its own change and report that another came first, so that its
	// caller makes it again. A lost reply is an error instead, and the call
	// it was for is refused or its result withheld.
	o.MaxRetries = -1
	r := &Redis{prefix: opts.Prefix, ttl: opts.TTL, timeout: opts.Timeout, where: where, now: time.Now}
	if r.prefix == "" {
		r.prefix = DefaultPrefix
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	switch {
	case opts.Replicas > 0:
		r.replicas = opts.Replicas
	case opts.Replicas == 0 && o.MasterName != "":
		r.replicas = 1 // a Sentinel set has a replica to take over
	}
	// Every operation ends by its deadline: the client honours the
	// context's, and no socket read or write outlasts it either (a reply
	// that comes too late is an error, never retried on its own).
	o.ContextTimeoutEnabled = true
	if o.ReadTimeout == 0 {
		o.ReadTimeout = r.timeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = r.timeout
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = r.timeout
	}
	r.client = redis.NewUniversalClient(o)
	r.batch = &batcher{client: r.client, timeout: r.timeout}
	if err := r.do(ctx, func(ctx context.Context) error { return r.client.Ping(ctx).Err() }); err != nil {
		r.client.Close()
		return nil, err
	}
	return r, nil
}

// do runs one operation within the store's timeout. An error names the
// servers and, past the deadline, says so; on a Redis Cluster it also has
// the client read the map of slots again, so that the next operation
// finds a master that took over (go-redis reads it again on a redirect,
// which a master that hangs or is gone never sends).
func (r *Redis) do(ctx context.Context, op func(ctx context.Context) error) error {
	octx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := op(octx)
	if err == nil {
		return nil
	}
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		cc.ReloadState(ctx)
	}
	if octx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("redis ledger %s: no answer within %v: %w", r.where, r.timeout, err)
	}
	return fmt.Errorf("redis ledger %s: %w", r.where, err)
}

// Keys: a session is one hash, PREFIX{a:AGENT}:session:SESSION, and each
// budget period of an agent one more, PREFIX{a:AGENT}:agent:PERIOD (AGENT
// and SESSION path-escaped, so neither holds a brace). The braces are a
// Redis Cluster hash tag: every key of an agent is in one slot, so a script
// that changes a session and its agent's counters together runs on Redis
// Cluster too.
func (r *Redis) agentTag(agent string) string { return r.prefix + "{a:" + url.PathEscape(agent) + "}" }

func (r *Redis) key(k Key) string {
	return r.agentTag(k.Agent) + ":session:" + url.PathEscape(k.Session)
}

func (r *Redis) agentKey(agent string, period Period) string {
	return r.agentTag(agent) + ":agent:" + period
}

// periodTTL is the least TTL, in seconds, of an agent's counters of a
// period: 32 days, longer than any period (a day, a week, a month) lasts
// after its last change.
const periodTTL = "2764800"

// sessionFields and agentFields are what a script returns: a session's
// counters, then its agent's (nil without a period).
const luaRead = `
local out = redis.call('HMGET', KEYS[1], 'tokens', 'shell', 'cost', 'role', 'project')
if KEYS[2] then
	local a = redis.call('HMGET', KEYS[2], 'tokens', 'shell', 'cost')
	for i = 1, 3 do table.insert(out, a[i]) end
else
	for i = 1, 3 do table.insert(out, false) end
end
`

// Every change ends by stamping the time of the change (ARGV[2], Unix
// seconds), refreshing the TTL of the keys it changed (ARGV[1], seconds; 0
// keeps them) and returning the counters. The agent's counters of a period
// outlive the period whatever the TTL (at least periodTTL: a TTL shorter
// than the period would give an agent idle that long a fresh budget), and
// those of "total" never expire. A script's own arguments start at ARGV[4];
// ARGV[3] is the period ("" for none).
const luaTail = `
redis.call('HSET', KEYS[1], 'updated', ARGV[2])
local ttl = tonumber(ARGV[1])
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
if KEYS[2] then
	redis.call('HSET', KEYS[2], 'updated', ARGV[2])
	if ttl > 0 and ARGV[3] ~= 'total' then redis.call('EXPIRE', KEYS[2], math.max(ttl, ` + periodTTL + `)) end
end` + luaRead + `
return out
`

// luaConflict returns the current counters, marked: the change was not
// made.
const luaConflict = luaRead + `
	table.insert(out, 'conflict')
	return out`

// luaFits defines fits(session, agent, most_tokens, most_cost): nil when
// the tokens and cost counts of the session's hash, and of the agent's
// when there is one, are at most most_tokens and most_cost (the largest
// int64 less the charge, in decimal), else why not. HINCRBY refuses to go
// past an int64 by itself, but a script runs on after a command's error:
// the counts it had added before would stay. So a charge checks every
// count first and changes none that way. The check is exact: Redis holds
// a count as its decimal text, which is compared as text (Lua's numbers
// are doubles).
const luaFits = `
local function fits(session, agent, most_tokens, most_cost)
	for _, key in ipairs({session, agent}) do
		local v = redis.call('HMGET', key, 'tokens', 'cost')
		for i, most in ipairs({most_tokens, most_cost}) do
			local n = v[i] or '0'
			if n ~= '0' and not string.match(n, '^%-?[1-9]%d*$') then
				return 'ERR the ' .. key .. ' count is not an integer: ' .. n
			end
			if string.sub(n, 1, 1) ~= '-' and (#n > #most or (#n == #most and n > most)) then
				return 'OVERFLOW the charge would take a count past the largest the ledger holds'
			end
		end
	end
	return nil
end
`

var (
	scriptInitRole = redis.NewScript(`
local role = redis.call('HGET', KEYS[1], 'role')
if not role or role == '' then redis.call('HSET', KEYS[1], 'role', ARGV[4]) end` + luaTail)

	scriptPinProject = redis.NewScript(`
local p = redis.call('HGET', KEYS[1], 'project')
if not p or p == '' then redis.call('HSET', KEYS[1], 'project', ARGV[4]) end` + luaTail)

	scriptSetRole = redis.NewScript(`redis.call('HSET', KEYS[1], 'role', ARGV[4])` + luaTail)

	// ARGV[4], ARGV[5], ARGV[6]: the expected shell count and role of the
	// session, and the agent's expected shell count. A mismatch returns the
	// current counters and changes nothing.
	scriptReserve = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'shell', 'role')
local a = 0
if KEYS[2] then a = tonumber(redis.call('HGET', KEYS[2], 'shell') or '0') end
if tonumber(v[1] or '0') ~= tonumber(ARGV[4]) or (v[2] or '') ~= ARGV[5] or (KEYS[2] and a ~= tonumber(ARGV[6])) then` + luaConflict + `
end
redis.call('HINCRBY', KEYS[1], 'shell', 1)
if KEYS[2] then redis.call('HINCRBY', KEYS[2], 'shell', 1) end` + luaTail)

	// ARGV[4], ARGV[5]: the expected role and the new one.
	scriptSwitchRole = redis.NewScript(`
local role = redis.call('HGET', KEYS[1], 'role') or ''
if role ~= ARGV[4] then` + luaConflict + `
end
redis.call('HSET', KEYS[1], 'role', ARGV[5])` + luaTail)

	scriptAddShell = redis.NewScript(`
redis.call('HINCRBY', KEYS[1], 'shell', 1)
if KEYS[2] then redis.call('HINCRBY', KEYS[2], 'shell', 1) end` + luaTail)

	// ARGV[4], ARGV[5]: the tokens and cost to add; ARGV[6], ARGV[7]: the
	// most each count may be before (see luaFits).
	scriptCharge = redis.NewScript(luaFits + `
local room = fits(KEYS[1], KEYS[2], ARGV[6], ARGV[7])
if room then return redis.error_reply(room) end
redis.call('HINCRBY', KEYS[1], 'tokens', ARGV[4])
redis.call('HINCRBY', KEYS[1], 'cost', ARGV[5])
if KEYS[2] then
	redis.call('HINCRBY', KEYS[2], 'tokens', ARGV[4])
	redis.call('HINCRBY', KEYS[2], 'cost', ARGV[5])
end` + luaTail)

	// ARGV[4], ARGV[5]: the tokens and cost to add; ARGV[6..9]: the
	// session's expected tokens and cost, and the agent's; ARGV[10],
	// ARGV[11]: the most each count may be before (see luaFits: the
	// expected counts are compared as Lua's doubles, which tell no two
	// counts apart that are within 1,024 of each other near 2^63).
	scriptChargeIf = redis.NewScript(luaFits + `
local v = redis.call('HMGET', KEYS[1], 'tokens', 'cost')
local same = tonumber(v[1] or '0') == tonumber(ARGV[6]) and tonumber(v[2] or '0') == tonumber(ARGV[7])
if same and KEYS[2] then
	local a = redis.call('HMGET', KEYS[2], 'tokens', 'cost')
	same = tonumber(a[1] or '0') == tonumber(ARGV[8]) and tonumber(a[2] or '0') == tonumber(ARGV[9])
end
if not same then` + luaConflict + `
end
local room = fits(KEYS[1], KEYS[2], ARGV[10], ARGV[11])
if room then return redis.error_reply(room) end
redis.call('HINCRBY', KEYS[1], 'tokens', ARGV[4])
redis.call('HINCRBY', KEYS[1], 'cost', ARGV[5])
if KEYS[2] then
	redis.call('HINCRBY', KEYS[2], 'tokens', ARGV[4])
	redis.call('HINCRBY', KEYS[2], 'cost', ARGV[5])
end` + luaTail)

	// A shell slot given back: each count only if above 0.
	scriptReleaseShell = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then` + luaConflict + `
end
if tonumber(redis.call('HGET', KEYS[1], 'shell') or '0') > 0 then redis.call('HINCRBY', KEYS[1], 'shell', -1) end
if KEYS[2] and tonumber(redis.call('HGET', KEYS[2], 'shell') or '0') > 0 then redis.call('HINCRBY', KEYS[2], 'shell', -1) end` + luaTail)

	// A session the store does not have is not created by a reset.
	scriptReset = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then` + luaConflict + `
end
redis.call('HSET', KEYS[1], 'tokens', 0, 'shell', 0, 'cost', 0)` + luaTail)

	// KEYS[1]: an agent's counters of a period; an empty reply when there
	// are none.
	scriptResetAgent = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
redis.call('HSET', KEYS[1], 'tokens', 0, 'shell', 0, 'cost', 0, 'updated', ARGV[1])
return {1}`)
)

// run runs a script on the session's key (and, with a period, its agent's)
// and reads the counters it returns; ok is false when the script reported
// a conflict.
func (r *Redis) run(ctx context.Context, k Key, period Period, s *redis.Script, args ...any) (Counters, bool, error) {
	if err := validate(k, period); err != nil {
		return Counters{}, false, err
	}
	keys := []string{r.key(k)}
	if period != "" {
		keys = append(keys, r.agentKey(k.Agent, period))
	}
	argv := append([]any{int64(r.ttl / time.Second), r.now().Unix(), period}, args...)
	var res []any
	if err := r.do(ctx, func(ctx context.Context) (err error) {
		res, err = r.change(ctx, s, keys, argv...)
		return err
	}); err != nil {
		return Counters{}, false, err
	}
	c, err := countersFrom(res)
	return c, len(res) == 8, err
}

// change runs a script that changes counters: without replicas to wait for,
// through the batcher, which sends concurrent changes together. With replicas,
// WAIT follows it on the same connection, to the master of its keys' slot,
// and the change is confirmed only once enough replicas have it: a master
// that loses its place to a replica loses no change it confirmed.
func (r *Redis) change(ctx context.Context, s *redis.Script, keys []string, args ...any) ([]any, error) {
	if r.replicas == 0 {
		return r.batch.run(ctx, s, keys, args)
	}
	cc, cluster := r.client.(*redis.ClusterClient)
	for redirects := 0; ; redirects++ {
		var node redis.UniversalClient = r.client
		if cluster { // a pipeline of a cluster sends WAIT, which has no key, to some node
			m, err := cc.MasterForKey(ctx, keys[0])
			if err != nil {
				return nil, err
			}
			node = m
		}
		res, err := r.changeOn(ctx, node, s, keys, args)
		if cluster && redirects < 3 && redis.HasErrorPrefix(err, "MOVED") {
			// Not run: another master serves the slot now. ForEachMaster
			// reads the map of slots again before it returns (ReloadState
			// would, later).
			if err := cc.ForEachMaster(ctx, func(context.Context, *redis.Client) error { return nil }); err != nil {
				return nil, err
			}
			continue
		}
		return res, err
	}
}

// changeOn runs the script on node, then WAIT. The server waits for the
// replicas as long as the operation's deadline lets the client wait (WAIT
// n 0): a change no replica confirms in time ends in a timeout, which has
// go-redis close that connection, so that the next one goes to the master
// that Sentinels name then, not on to a master that lost its place.
func (r *Redis) changeOn(ctx context.Context, node redis.UniversalClient, s *redis.Script, keys []string, args []any) ([]any, error) {
	for _, loaded := range []bool{true, false} {
		pipe := node.Pipeline()
		run := s.Eval
		if loaded {
			run = s.EvalSha
		}
		cmd := run(ctx, pipe, keys, args...)
		acks := pipe.Do(ctx, "wait", r.replicas, 0)
		pipe.Exec(ctx) // each command has its own error
		if loaded && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			continue // not run: send the script itself
		}
		res, err := cmd.Slice()
		if err == nil {
			var n int64
			if n, err = acks.Int64(); err == nil && n >= int64(r.replicas) {
				return res, nil
			} else if err == nil {
				err = fmt.Errorf("WAIT: %d of %d replicas", n, r.replicas)
			}
		}
		if ctx.Err() != nil { // the replicas never confirmed it, or the master never answered
			return nil, fmt.Errorf("a change not confirmed by %d replica(s), and so not counted as done: %w", r.replicas, err)
		}
		return nil, err
	}
	panic("unreachable")
}

// countersFrom reads tokens, shell, cost, role, project and the agent's
// tokens, shell and cost.
func countersFrom(v []any) (Counters, error) {
	if len(v) < 8 {
		return Counters{}, fmt.Errorf("redis ledger: unexpected reply %v", v)
	}
	var c Counters
	for i, dst := range []*int64{&c.Tokens, &c.Shell, &c.CostMicros, 5: &c.AgentUsage.Tokens, 6: &c.AgentUsage.Shell, 7: &c.AgentUsage.CostMicros} {
		if dst == nil || v[i] == nil {
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
	c.Project, _ = v[4].(string)
	return c, nil
}

var scriptGet = redis.NewScript(luaRead + `
return out`)

func (r *Redis) Get(ctx context.Context, k Key, period Period) (Counters, error) {
	if err := validate(k, period); err != nil {
		return Counters{}, err
	}
	keys := []string{r.key(k)}
	if period != "" {
		keys = append(keys, r.agentKey(k.Agent, period))
	}
	var res []any
	if err := r.do(ctx, func(ctx context.Context) (err error) {
		res, err = scriptGet.Run(ctx, r.client, keys).Slice()
		return err
	}); err != nil {
		return Counters{}, err
	}
	return countersFrom(res)
}

func (r *Redis) InitRole(ctx context.Context, k Key, role string) (Counters, error) {
	c, _, err := r.run(ctx, k, "", scriptInitRole, role)
	return c, err
}

func (r *Redis) PinProject(ctx context.Context, k Key, project string) (Counters, error) {
	c, _, err := r.run(ctx, k, "", scriptPinProject, project)
	return c, err
}

func (r *Redis) SetRole(ctx context.Context, k Key, role string) (Counters, error) {
	c, _, err := r.run(ctx, k, "", scriptSetRole, role)
	return c, err
}

func (r *Redis) SwitchRole(ctx context.Context, k Key, from, to string) (Counters, bool, error) {
	return r.run(ctx, k, "", scriptSwitchRole, from, to)
}

func (r *Redis) ReserveShell(ctx context.Context, k Key, period Period, expected Counters) (Counters, bool, error) {
	return r.run(ctx, k, period, scriptReserve, expected.Shell, expected.Role, expected.AgentUsage.Shell)
}

func (r *Redis) AddShell(ctx context.Context, k Key, period Period) (Counters, error) {
	c, _, err := r.run(ctx, k, period, scriptAddShell)
	return c, err
}

func (r *Redis) Charge(ctx context.Context, k Key, period Period, tokens, cost int64) (Counters, error) {
	if err := checkCharge(tokens, cost); err != nil {
		return Counters{}, err
	}
	c, _, err := r.run(ctx, k, period, scriptCharge, tokens, cost, math.MaxInt64-tokens, math.MaxInt64-cost)
	if redis.HasErrorPrefix(err, "OVERFLOW") {
		return Counters{}, errOverflow(tokens, cost)
	}
	return c, err
}

func (r *Redis) ChargeIf(ctx context.Context, k Key, period Period, expected Counters, tokens, cost int64) (Counters, bool, error) {
	if err := checkChargeIf(expected, period, tokens, cost); err != nil {
		return Counters{}, false, err
	}
	a := expected.AgentUsage
	c, ok, err := r.run(ctx, k, period, scriptChargeIf, tokens, cost, expected.Tokens, expected.CostMicros, a.Tokens, a.CostMicros,
		math.MaxInt64-tokens, math.MaxInt64-cost)
	if redis.HasErrorPrefix(err, "OVERFLOW") {
		return Counters{}, false, errOverflow(tokens, cost)
	}
	return c, ok, err
}

func (r *Redis) ReleaseShell(ctx context.Context, k Key, period Period) (Counters, error) {
	c, ok, err := r.run(ctx, k, period, scriptReleaseShell)
	if err == nil && !ok {
		return c, ErrNoSession
	}
	return c, err
}

func (r *Redis) Reset(ctx context.Context, k Key) error {
	_, ok, err := r.run(ctx, k, "", scriptReset)
	if err == nil && !ok {
		return ErrNoSession
	}
	return err
}

func (r *Redis) ResetAgent(ctx context.Context, agent string, period Period) error {
	if err := validate(Key{Agent: agent, Session: "-"}, period); err != nil {
		return err
	}
	if period == "" {
		return ErrNoSession
	}
	var res []any
	if err := r.do(ctx, func(ctx context.Context) (err error) {
		res, err = r.change(ctx, scriptResetAgent, []string{r.agentKey(agent, period)}, r.now().Unix())
		return err
	}); err != nil {
		return err
	}
	if len(res) == 0 {
		return ErrNoSession
	}
	return nil
}

// Sessions scans the keyspace, on a Redis Cluster that of every master (a
// session id given matches one key per agent), and reads each session's
// hash.
func (r *Redis) Sessions(ctx context.Context, session string) ([]Session, error) {
	match := globEscape(r.prefix) + "{a:*}:session:"
	if session != "" {
		match += globEscape(url.PathEscape(session))
	} else {
		match += "*"
	}
	var mu sync.Mutex
	var out []Session
	scan := func(ctx context.Context, node redis.UniversalClient) error {
		iter := node.Scan(ctx, 0, match, 1000).Iterator()
		for {
			var more bool
			if err := r.do(ctx, func(ctx context.Context) error { // each page within the timeout
				more = iter.Next(ctx)
				return iter.Err()
			}); err != nil || !more {
				return err
			}
			x, ok, err := r.session(ctx, iter.Val())
			if err != nil {
				return err
			}
			if ok {
				mu.Lock()
				out = append(out, x)
				mu.Unlock()
			}
		}
	}
	var err error
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		var scanErr error // the first of the masters' scans
		err = cc.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
			if err := scan(ctx, node); err != nil {
				mu.Lock()
				scanErr = cmp.Or(scanErr, err)
				mu.Unlock()
			}
			return nil
		})
		if err != nil { // the cluster did not say which nodes are masters
			err = fmt.Errorf("redis ledger %s: %w", r.where, err)
		}
		err = cmp.Or(err, scanErr)
	} else {
		err = scan(ctx, r.client)
	}
	if err != nil {
		return nil, err
	}
	sortSessions(out)
	return out, nil
}

// session reads the session of a key that a scan found; ok is false for a
// key not of this store's making, or expired since the scan.
func (r *Redis) session(ctx context.Context, key string) (x Session, ok bool, err error) {
	rest, ok := strings.CutPrefix(key, r.prefix+"{a:")
	if !ok {
		return x, false, nil
	}
	agent, id, ok := strings.Cut(rest, "}:session:")
	if !ok {
		return x, false, nil
	}
	var err1, err2 error
	x.Agent, err1 = url.PathUnescape(agent)
	x.Session, err2 = url.PathUnescape(id)
	if err1 != nil || err2 != nil {
		return x, false, nil
	}
	// Through the client, not the node: a key may move between slots.
	var v []any
	if err := r.do(ctx, func(ctx context.Context) (err error) {
		v, err = r.client.HMGet(ctx, key, "tokens", "shell", "cost", "role", "project", "updated").Result()
		return err
	}); err != nil {
		return x, false, err
	}
	if !slices.ContainsFunc(v, func(x any) bool { return x != nil }) {
		return x, false, nil
	}
	if x.Counters, err = countersFrom(append(v[:5:5], nil, nil, nil)); err != nil {
		return x, false, err
	}
	if s, _ := v[5].(string); s != "" {
		if t, err := strconv.ParseInt(s, 10, 64); err == nil {
			x.Updated = time.Unix(t, 0)
		}
	}
	return x, true, nil
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
