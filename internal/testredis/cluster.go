package testredis

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NodeTimeout is the cluster's node timeout: how long a node may be silent
// before the others count it failed and a replica takes over its slots.
const NodeTimeout = 1500 * time.Millisecond

// Cluster is a Redis Cluster of one test, started on loopback: masters
// that share the 16384 slots, and the replicas added to them.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts masters nodes (at least 3), joins them with
// `redis-cli --cluster create` and waits until every node says the cluster
// is ok.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	c := &Cluster{}
	args := []string{"create"}
	for range masters {
		n := c.start(t)
		args = append(args, n.Addr())
	}
	cli(t, append([]string{"--cluster"}, append(args, "--cluster-yes")...)...)
	c.WaitOK(t)
	return c
}

func (c *Cluster) start(t testing.TB) *Server {
	n := StartServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout/time.Millisecond)),
		"--cluster-replica-validity-factor", "0") // a replica may always take over
	c.Nodes = append(c.Nodes, n)
	return n
}

// URL is the ledger URL of the cluster: its masters at start, as seed
// nodes.
func (c *Cluster) URL() string {
	var addrs []string
	for _, n := range c.Nodes[:min(3, len(c.Nodes))] {
		addrs = append(addrs, n.Addr())
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// WaitOK waits until every node that answers says cluster_state:ok with
// all slots served, and they agree on the epoch of the configuration.
func (c *Cluster) WaitOK(t testing.TB) {
	t.Helper()
	Eventually(t, 30*time.Second, "cluster_state:ok", func() (bool, string) {
		for _, n := range c.Nodes {
			info, err := n.Admin.ClusterInfo(t.Context()).Result()
			if err != nil {
				return false, fmt.Sprintf("%s: %v", n.Addr(), err)
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
				return false, n.Addr() + ": " + strings.ReplaceAll(strings.TrimSpace(info), "\r\n", " ")
			}
		}
		return true, ""
	})
}

// ID is a node's cluster id.
func (c *Cluster) ID(t testing.TB, n *Server) string {
	t.Helper()
	return n.Do(t, "cluster", "myid").(string)
}

// node is one line of CLUSTER NODES.
type node struct {
	id, addr, flags, master string
	slots                   []string
}

func (c *Cluster) nodes(t testing.TB, from *Server) ([]node, error) {
	v, err := from.Admin.ClusterNodes(t.Context()).Result()
	if err != nil {
		return nil, err
	}
	var out []node
	for line := range strings.SplitSeq(strings.TrimSpace(v), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		out = append(out, node{id: f[0], addr: addr, flags: f[2], master: f[3], slots: f[8:]})
	}
	return out, nil
}

// MasterOf is the node that serves key's slot now, as the node at from
// sees it.
func (c *Cluster) MasterOf(t testing.TB, from *Server, key string) *Server {
	t.Helper()
	m, why := c.masterOf(t, from, key)
	if m == nil {
		t.Fatal(why)
	}
	return m
}

// masterOf is MasterOf, nil and why when from knows no master of key's
// slot: for a moment during a failover, as a node sees it.
func (c *Cluster) masterOf(t testing.TB, from *Server, key string) (*Server, string) {
	t.Helper()
	slot := from.Do(t, "cluster", "keyslot", key).(int64)
	list, err := c.nodes(t, from)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		if !strings.Contains(n.flags, "master") {
			continue
		}
		for _, r := range n.slots {
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.ParseInt(lo, 10, 64)
			b, err2 := strconv.ParseInt(hi, 10, 64)
			if err1 == nil && err2 == nil && a <= slot && slot <= b {
				return c.byAddr(t, n.addr), ""
			}
		}
	}
	return nil, fmt.Sprintf("no master serves slot %d of %q", slot, key)
}

func (c *Cluster) byAddr(t testing.TB, addr string) *Server {
	t.Helper()
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	t.Fatalf("no node at %s", addr)
	return nil
}

// AddReplica starts a node and adds it to the cluster as a replica of
// master, waiting until it has copied the master and every other node
// knows it as the master's replica (so it can win a failover).
func (c *Cluster) AddReplica(t testing.TB, master *Server) *Server {
	t.Helper()
	r := c.start(t)
	id := c.ID(t, master)
	cli(t, "--cluster", "add-node", r.Addr(), master.Addr(), "--cluster-slave", "--cluster-master-id", id)
	Eventually(t, 30*time.Second, "the replica in sync and known", func() (bool, string) {
		if s := r.Info("replication", "master_link_status"); s != "up" {
			return false, "master_link_status " + s
		}
		for _, n := range c.Nodes {
			if n == r {
				continue
			}
			list, err := c.nodes(t, n)
			if err != nil {
				return false, err.Error()
			}
			found := false
			for _, x := range list {
				found = found || x.addr == r.Addr() && strings.Contains(x.flags, "slave") && x.master == id
			}
			if !found {
				return false, n.Addr() + " does not know the replica yet"
			}
		}
		return true, ""
	})
	return r
}

// WaitMaster waits until every node in nodes says that n serves key's
// slot.
func (c *Cluster) WaitMaster(t testing.TB, n *Server, key string, nodes ...*Server) {
	t.Helper()
	Eventually(t, 30*time.Second, n.Addr()+" serving "+key, func() (bool, string) {
		for _, from := range nodes {
			if role := n.Info("replication", "role"); role != "master" {
				return false, n.Addr() + " is " + role
			}
			m, why := c.masterOf(t, from, key)
			if m == nil {
				return false, from.Addr() + ": " + why
			}
			if m != n {
				return false, from.Addr() + " says " + m.Addr()
			}
		}
		return true, ""
	})
}
