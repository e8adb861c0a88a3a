package budget

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/internal/testredis"
)

// openRedisAt opens a Redis store on url with a key prefix of the test's
// own.
func openRedisAt(t testing.TB, url string, o Options) *Redis {
	t.Helper()
	o.Prefix = fmt.Sprintf("%s:%d:", t.Name(), time.Now().UnixNano())
	s, err := OpenRedis(context.Background(), url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// runContract runs every check of the store contract, in parallel, each on
// a fresh store that open gives.
func runContract(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.check(t, open(t))
		})
	}
}

// The whole store contract holds on a Redis Cluster of three masters: the
// scripts of a session and its agent touch one slot, racing callers get
// exactly the free slots, and Sessions finds the sessions of every master.
func TestRedisCluster(t *testing.T) {
	t.Parallel()
	c := testredis.StartCluster(t, 3)
	runContract(t, func(t *testing.T) Store { return openRedisAt(t, c.URL(), Options{}) })

	// The agents of the Sessions check live on more than one master, so
	// that finding them all takes a scan of every master.
	s := openRedisAt(t, c.URL(), Options{})
	masters := map[int]bool{}
	for _, agent := range []string{"a", "b", "b*/x", ""} {
		masters[c.MasterOf(t, c.Nodes[0], s.key(Key{Agent: agent, Session: "s"})).Port] = true
	}
	if len(masters) < 2 {
		t.Errorf("the agents of the Sessions check share one master: %v", masters)
	}
}

// The URL forms of a Redis ledger: one server, a cluster by some of its
// nodes, the master that Sentinels name; go-redis's options pass, unknown
// ones and malformed servers are errors that quote no password.
func TestRedisURL(t *testing.T) {
	t.Parallel()
	type want struct {
		addrs            []string
		cluster          bool
		master           string
		db               int
		user, password   string
		sentinelPassword string
		poolSize         int
		tls              bool
	}
	for _, tt := range []struct {
		url  string
		want want
		err  string // a part of the error; "" for none
	}{
		{url: "redis://127.0.0.1:6379/2", want: want{addrs: []string{"127.0.0.1:6379"}, db: 2}},
		{url: "redis://h", want: want{addrs: []string{"h:6379"}}},
		{url: "redis://u:p%40ss@h:1/0?pool_size=7", want: want{addrs: []string{"h:1"}, user: "u", password: "p@ss", poolSize: 7}},
		{url: "rediss://:secret@h:1", want: want{addrs: []string{"h:1"}, password: "secret", tls: true}},
		{url: "redis+cluster://a:1,b:2,[::1]:3", want: want{addrs: []string{"a:1", "b:2", "[::1]:3"}, cluster: true}},
		{url: "redis+cluster://a:1", want: want{addrs: []string{"a:1"}, cluster: true}},
		{url: "rediss+cluster://:pw@a:1,b", want: want{addrs: []string{"a:1", "b:6379"}, cluster: true, password: "pw", tls: true}},
		{url: "redis+sentinel://s1,s2:26380/ledger", want: want{addrs: []string{"s1:26379", "s2:26380"}, master: "ledger"}},
		{url: "redis+sentinel://:pw@s1:1/my%20master/3?sentinel_password=sp&dial_timeout=1s",
			want: want{addrs: []string{"s1:1"}, master: "my master", db: 3, password: "pw", sentinelPassword: "sp"}},
		{url: "redis+cluster://a:1/1", err: "only database 0"},
		{url: "redis+sentinel://s1:1", err: "master's name"},
		{url: "redis+sentinel://s1:1/m/1/2", err: "master's name"},
		{url: "redis://a:1,b:2", err: "several servers"},
		{url: "redis+cluster://a:1,,b:2", err: "not host:port"},
		{url: "redis+cluster://:secret@a:99999", err: "not host:port"},
		{url: "redis+cluster://a:1?bogus=1", err: "bogus"},
		{url: "redis+shard://a:1", err: "unknown scheme"},
	} {
		o, _, err := redisOptions(tt.url)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: error %v, want one with %q (and no password)", tt.url, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		got := want{addrs: o.Addrs, cluster: o.IsClusterMode, master: o.MasterName, db: o.DB, user: o.Username, password: o.Password,
			sentinelPassword: o.SentinelPassword, poolSize: o.PoolSize, tls: o.TLSConfig != nil}
		if !slices.Equal(got.addrs, tt.want.addrs) {
			t.Errorf("%s: servers %v, want %v", tt.url, got.addrs, tt.want.addrs)
		}
		got.addrs, tt.want.addrs = nil, nil
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.url, got, tt.want)
		}
	}
}
