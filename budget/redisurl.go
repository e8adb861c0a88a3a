package budget

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisOptions reads the URL of a Redis ledger:
//
//	redis://[user:password@]host:port[/db][?options]                            one server
//	redis+cluster://[user:password@]host:port[,host:port...][?options]          a Redis Cluster, by some of its nodes
//	redis+sentinel://[user:password@]host:port[,host:port...]/master[/db][?options]   the master Sentinels name
//
// and rediss://, rediss+cluster://, rediss+sentinel://: the same over TLS.
// A port left out is 6379 (26379 for a Sentinel). The user and password are
// those of the data nodes; a Sentinel's own are the options
// sentinel_username and sentinel_password. The other options are
// go-redis's (dial_timeout, read_timeout, pool_size, max_retries, ...); an
// unknown one is an error. where names the servers for messages, without
// credentials.
func redisOptions(raw string) (o *redis.UniversalOptions, where string, err error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	base, kind, _ := strings.Cut(scheme, "+")
	if !ok || base != "redis" && base != "rediss" || kind != "" && kind != "cluster" && kind != "sentinel" {
		return nil, "", fmt.Errorf("unknown scheme %q (want redis, rediss, redis+cluster or redis+sentinel)", scheme)
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	path, query, _ := strings.Cut(path, "?")
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	defaultPort := "6379"
	if kind == "sentinel" {
		defaultPort = "26379"
	}
	var addrs []string
	for h := range strings.SplitSeq(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil { // no port
			host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultPort
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil || host == "" || strings.ContainsAny(host, "[]") {
			return nil, "", fmt.Errorf("%q is not host:port", h)
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	if kind == "" && len(addrs) > 1 {
		return nil, "", errors.New("several servers: a Redis Cluster is redis+cluster://, Sentinels redis+sentinel://")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, "", fmt.Errorf("options: %w", err)
	}
	var sentinelUser, sentinelPassword, master string
	if kind == "sentinel" {
		sentinelUser, sentinelPassword = q.Get("sentinel_username"), q.Get("sentinel_password")
		q.Del("sentinel_username")
		q.Del("sentinel_password")
		elems := strings.Split(strings.Trim(path, "/"), "/")
		if master, err = url.PathUnescape(elems[0]); err != nil || master == "" || len(elems) > 2 {
			return nil, "", errors.New("want the master's name after the Sentinels: redis+sentinel://host:port,.../master[/db]")
		}
		path = "/" + strings.Join(elems[1:], "/")
	}
	if kind == "cluster" && strings.Trim(path, "/") != "" && strings.Trim(path, "/") != "0" {
		return nil, "", errors.New("a Redis Cluster has only database 0")
	}
	// go-redis reads the credentials, the database and the options of a
	// one-server URL; the servers are ours.
	single, err := redis.ParseURL(base + "://" + userinfo + addrs[0] + path + "?" + q.Encode())
	if err != nil {
		return nil, "", err
	}
	o = &redis.UniversalOptions{
		Addrs: addrs, IsClusterMode: kind == "cluster", MasterName: master,
		Username: single.Username, Password: single.Password, DB: single.DB,
		SentinelUsername: sentinelUser, SentinelPassword: sentinelPassword,
		ClientName: single.ClientName, Protocol: single.Protocol,
		MaxRetries: single.MaxRetries, MinRetryBackoff: single.MinRetryBackoff, MaxRetryBackoff: single.MaxRetryBackoff,
		DialTimeout: single.DialTimeout, ReadTimeout: single.ReadTimeout, WriteTimeout: single.WriteTimeout,
		PoolFIFO: single.PoolFIFO, PoolSize: single.PoolSize, PoolTimeout: single.PoolTimeout,
		MinIdleConns: single.MinIdleConns, MaxIdleConns: single.MaxIdleConns, MaxActiveConns: single.MaxActiveConns,
		ConnMaxIdleTime: single.ConnMaxIdleTime, ConnMaxLifetime: single.ConnMaxLifetime,
		TLSConfig: single.TLSConfig,
	}
	if o.TLSConfig != nil && kind != "" {
		o.TLSConfig.ServerName = "" // each node's own name, from its address
	}
	where = strings.Join(addrs, ",")
	switch kind {
	case "cluster":
		where = "cluster " + where
	case "sentinel":
		where = fmt.Sprintf("master %q of Sentinels %s", master, where)
	}
	return o, where, nil
}

// Redacted is a ledger URL as it may be shown: its password, and a
// Sentinel's (sentinel_password), replaced by "xxxxx".
func Redacted(ledger string) string {
	u, err := url.Parse(ledger)
	if err != nil || u.Host == "" {
		return ledger
	}
	q := u.Query()
	if q.Has("sentinel_password") {
		q.Set("sentinel_password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
