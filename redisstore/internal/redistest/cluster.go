package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvCluster names the environment variable holding the addresses of a
// running Redis Cluster for the tests, comma-separated
// (127.0.0.1:7000,127.0.0.1:7001,...).
const EnvCluster = "TOOLGUARD_REDIS_CLUSTER"

// NodeTimeout is the cluster-node-timeout of the clusters the tests
// start, in ms: a master that does not answer for this long is failed
// over to its replica.
const NodeTimeout = 1000

// Cluster is a Redis Cluster of private redis-server processes on
// loopback ports: masters, each with its replicas.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts masters × (1 + replicas) cluster nodes with args
// (after the cluster's own), joins them with redis-cli --cluster create
// and waits until every node reports cluster_state:ok. The nodes are
// killed when the test ends. It skips (fails under CI=true) when
// redis-server or redis-cli is missing.
func StartCluster(tb testing.TB, masters, replicas int, args ...string) *Cluster {
	tb.Helper()
	c, err := startCluster(masters, replicas, args)
	if err != nil {
		unavailable(tb, "cannot start a cluster of redis-server --cluster-enabled yes: %v", err)
	}
	tb.Cleanup(c.Stop)
	return c
}

func startCluster(masters, replicas int, args []string) (*Cluster, error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	var addrs []string
	for i := 0; i < masters*(1+replicas); i++ {
		bus, err := freePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		nodeArgs := append([]string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(NodeTimeout), "--cluster-port", strconv.Itoa(bus),
		}, args...)
		s, err := start(nodeArgs)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
		addrs = append(addrs, s.Addr())
	}
	create := append([]string{"--cluster", "create"}, addrs...)
	create = append(create, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, create...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	if err := c.waitOK(20 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Stop kills every node.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.stop()
	}
}

// Addrs returns the nodes' host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// CLI runs redis-cli against the node at addr and returns its output.
func CLI(tb testing.TB, addr string, args ...string) string {
	tb.Helper()
	out, err := cliOut(addr, args...)
	if err != nil {
		tb.Fatalf("redis-cli -h %s %s: %v: %s", addr, strings.Join(args, " "), err, out)
	}
	return out
}

func cliOut(addr string, args ...string) (string, error) {
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// WaitOK waits until every running node reports cluster_state:ok, they
// agree on the masters of the slots, and every replica is in sync with
// its master.
func (c *Cluster) WaitOK(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	if err := c.waitOK(timeout); err != nil {
		tb.Fatal(err)
	}
}

func (c *Cluster) waitOK(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if last = c.notOK(); last == "" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("redistest: the cluster is not ok after %v: %s", timeout, last)
}

// notOK returns why the cluster is not ready, or "".
func (c *Cluster) notOK() string {
	var view string
	for _, n := range c.Nodes {
		n.mu.Lock()
		up := n.proc != nil
		n.mu.Unlock()
		if !up {
			continue
		}
		info, err := cliOut(n.Addr(), "cluster", "info")
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return n.Addr() + ": " + info
		}
		repl, err := cliOut(n.Addr(), "info", "replication")
		if err != nil || strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return n.Addr() + ": the replica is not in sync with its master"
		}
		m := c.mastersSeenBy(n.Addr())
		if view == "" {
			view = m
		} else if m != view {
			return fmt.Sprintf("the nodes disagree: %s / %s", view, m)
		}
	}
	return ""
}

// mastersSeenBy returns the masters serving slots as addr sees them, one
// "slots→addr" line each, sorted.
func (c *Cluster) mastersSeenBy(addr string) string {
	out, err := cliOut(addr, "cluster", "nodes")
	if err != nil {
		return "error: " + out
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 9 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
			continue
		}
		lines = append(lines, strings.Join(f[8:], ",")+"→"+strings.Split(f[1], "@")[0])
	}
	sort.Strings(lines)
	return strings.Join(lines, " ")
}

// Role returns "master" or "slave" for the node at addr, as it says.
func Role(tb testing.TB, addr string) string {
	tb.Helper()
	out := CLI(tb, addr, "role")
	role, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(role)
}

// Masters returns the running nodes that are masters.
func (c *Cluster) Masters(tb testing.TB) []*Server {
	tb.Helper()
	var out []*Server
	for _, n := range c.Nodes {
		n.mu.Lock()
		up := n.proc != nil
		n.mu.Unlock()
		if up && Role(tb, n.Addr()) == "master" {
			out = append(out, n)
		}
	}
	return out
}

// ReplicaOf returns the running node that replicates master.
func (c *Cluster) ReplicaOf(tb testing.TB, master *Server) *Server {
	tb.Helper()
	for _, n := range c.Nodes {
		if n == master {
			continue
		}
		n.mu.Lock()
		up := n.proc != nil
		n.mu.Unlock()
		if !up {
			continue
		}
		info := CLI(tb, n.Addr(), "info", "replication")
		if strings.Contains(info, "role:slave") && strings.Contains(info, fmt.Sprintf("master_port:%d", master.port)) {
			return n
		}
	}
	tb.Fatalf("redistest: no replica of %s", master.Addr())
	return nil
}

// SharedCluster is the cluster that the tests of one package share:
// the one at TOOLGUARD_REDIS_CLUSTER, or 3 masters with a replica each,
// started on first use.
type SharedCluster struct {
	once  sync.Once
	c     *Cluster
	addrs []string
	err   error
}

// Addrs returns the shared cluster's node addresses, starting it on first
// use, or skips (fails under CI=true) the test when there is none.
func (s *SharedCluster) Addrs(tb testing.TB) []string {
	tb.Helper()
	s.once.Do(func() {
		if v := os.Getenv(EnvCluster); v != "" {
			s.addrs = strings.Split(v, ",")
			return
		}
		s.c, s.err = startCluster(3, 1, nil)
		if s.err == nil {
			s.addrs = s.c.Addrs()
		}
	})
	if s.err != nil {
		unavailable(tb, "cannot start a cluster of redis-server --cluster-enabled yes: %v", s.err)
	}
	return s.addrs
}

// Close stops the cluster if Addrs started it.
func (s *SharedCluster) Close() {
	if s.c != nil {
		s.c.Stop()
	}
}
