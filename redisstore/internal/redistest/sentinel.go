package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SentinelMaster is the name the Sentinels of StartSentinel monitor.
const SentinelMaster = "quotas"

// Sentinel is a primary, its replica and a Sentinel that fails the primary
// over to the replica (quorum 1, down after 500 ms): private redis-server
// processes on loopback ports, the Sentinel run as redis-server
// --sentinel, as Debian's redis-sentinel does.
type Sentinel struct {
	Primary, Replica *Server
	Sentinel         *Server
}

// StartSentinel starts the primary and the replica with args (after their
// own) and the Sentinel, and waits until the replica is in sync and the
// Sentinel sees it. They are killed when the test ends.
func StartSentinel(tb testing.TB, args ...string) *Sentinel {
	tb.Helper()
	primary := Start(tb, args...)
	replica := Start(tb, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.port)}, args...)...)
	s := &Sentinel{Primary: primary, Replica: replica}
	if err := waitFor(10*time.Second, func() bool {
		return strings.Contains(info(replica.Addr(), "replication"), "master_link_status:up")
	}); err != nil {
		tb.Fatalf("redistest: the replica did not sync: %s", replica.LogTail())
	}
	sen, err := startSentinel(primary)
	if err != nil {
		unavailable(tb, "cannot start redis-server --sentinel: %v", err)
	}
	tb.Cleanup(sen.stop)
	s.Sentinel = sen
	if err := waitFor(10*time.Second, func() bool {
		out, _ := cliOut(sen.Addr(), "sentinel", "replicas", SentinelMaster)
		return strings.Contains(out, replica.Addr()[strings.LastIndexByte(replica.Addr(), ':')+1:])
	}); err != nil {
		tb.Fatalf("redistest: the sentinel does not see the replica: %s", sen.LogTail())
	}
	return s
}

func startSentinel(primary *Server) (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-sentinel-")
	if err != nil {
		return nil, err
	}
	s := &Server{path: path, dir: dir, own: true}
	for try := 0; try < 3; try++ {
		if s.port, err = freePort(); err != nil {
			break
		}
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 1\n"+
			"sentinel down-after-milliseconds %s 500\n"+
			"sentinel failover-timeout %s 5000\n",
			s.port, dir, SentinelMaster, primary.port, SentinelMaster, SentinelMaster)
		if err = os.WriteFile(conf, []byte(text), 0o600); err != nil {
			break
		}
		s.conf, s.args = conf, []string{"--sentinel"}
		if err = s.launch(); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// Addrs returns the Sentinel's address, for redis.FailoverOptions.
func (s *Sentinel) Addrs() []string { return []string{s.Sentinel.Addr()} }

// MasterAddr returns the primary the Sentinel names now.
func (s *Sentinel) MasterAddr(tb testing.TB) string {
	tb.Helper()
	out, err := cliOut(s.Sentinel.Addr(), "sentinel", "get-master-addr-by-name", SentinelMaster)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		tb.Fatalf("redistest: sentinel answered %q", out)
	}
	return f[0] + ":" + f[1]
}

// WaitMaster waits until the Sentinel names addr as the primary.
func (s *Sentinel) WaitMaster(tb testing.TB, addr string, timeout time.Duration) {
	tb.Helper()
	if err := waitFor(timeout, func() bool {
		out, _ := cliOut(s.Sentinel.Addr(), "sentinel", "get-master-addr-by-name", SentinelMaster)
		return strings.Join(strings.Fields(out), ":") == addr
	}); err != nil {
		tb.Fatalf("redistest: the sentinel did not promote %s: %s", addr, s.Sentinel.LogTail())
	}
}

// Info returns the INFO section of the server at addr ("" when it does not
// answer).
func Info(addr, section string) string { return info(addr, section) }

func info(addr, section string) string {
	out, _ := cliOut(addr, "info", section)
	return out
}

func waitFor(timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
