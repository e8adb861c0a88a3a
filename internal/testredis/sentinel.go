package testredis

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// MasterName is the name the Sentinels of StartSentinel know the master by.
const MasterName = "ledger"

// Sentinel is a master, its replica and the Sentinels that watch them, of
// one test, on loopback.
type Sentinel struct {
	Master, Replica *Server
	Sentinels       []*Server
}

// StartSentinel starts a master, a replica of it and n Sentinels (quorum:
// a majority of them), and waits until every Sentinel knows the replica.
func StartSentinel(t testing.TB, n int) *Sentinel {
	t.Helper()
	s := &Sentinel{Master: StartServer(t)}
	s.Replica = StartServer(t, "--replicaof", "127.0.0.1", fmt.Sprint(s.Master.Port))
	Eventually(t, 30*time.Second, "the replica in sync", func() (bool, string) {
		st := s.Replica.Info("replication", "master_link_status")
		return st == "up", "master_link_status " + st
	})
	for i := range n {
		conf := filepath.Join(t.TempDir(), fmt.Sprintf("sentinel-%d.conf", i))
		src := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d\n"+
			"sentinel down-after-milliseconds %[1]s 1000\nsentinel failover-timeout %[1]s 10000\n",
			MasterName, s.Master.Port, n/2+1)
		if err := os.WriteFile(conf, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		s.Sentinels = append(s.Sentinels, StartServer(t, conf, "--sentinel"))
	}
	Eventually(t, 30*time.Second, "every Sentinel knows the replica", func() (bool, string) {
		for _, x := range s.Sentinels {
			v, err := x.Admin.Do(t.Context(), "sentinel", "replicas", MasterName).Slice()
			if err != nil {
				return false, err.Error()
			}
			if len(v) != 1 || field(v[0], "port") != fmt.Sprint(s.Replica.Port) || field(v[0], "master-link-status") != "ok" {
				return false, fmt.Sprintf("%s: %v", x.Addr(), v)
			}
		}
		return true, ""
	})
	return s
}

// URL is the ledger URL of the set: its Sentinels and the master's name.
func (s *Sentinel) URL() string {
	var addrs []string
	for _, x := range s.Sentinels {
		addrs = append(addrs, x.Addr())
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + MasterName
}

// Failover has the first Sentinel promote the replica (SENTINEL FAILOVER)
// and waits until every Sentinel names it the master, and it says so
// itself.
func (s *Sentinel) Failover(t testing.TB) {
	t.Helper()
	s.Sentinels[0].Do(t, "sentinel", "failover", MasterName)
	Eventually(t, 30*time.Second, "the replica promoted", func() (bool, string) {
		if role := s.Replica.Info("replication", "role"); role != "master" {
			return false, "the replica is " + role
		}
		for _, x := range s.Sentinels {
			v, err := x.Admin.Do(t.Context(), "sentinel", "get-master-addr-by-name", MasterName).Slice()
			if err != nil || len(v) != 2 || v[1] != fmt.Sprint(s.Replica.Port) {
				return false, fmt.Sprintf("%s names %v (%v)", x.Addr(), v, err)
			}
		}
		return true, ""
	})
	s.Master, s.Replica = s.Replica, s.Master
}

// field is a field of a Sentinel's description of an instance (a map in
// RESP3, a flat list of names and values in RESP2).
func field(v any, name string) string {
	switch x := v.(type) {
	case map[any]any:
		return fmt.Sprint(x[name])
	case map[string]any:
		return fmt.Sprint(x[name])
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			if x[i] == name {
				return fmt.Sprint(x[i+1])
			}
		}
	}
	return ""
}
