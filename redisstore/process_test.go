package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/redisstore/internal/redistest"

	"github.com/toolguard/toolguard/store"
)

// The environment of a child process of TestMultiProcess.
const (
	envChild  = "TOOLGUARD_REDISSTORE_CHILD" // "1" in a child
	envPrefix = "TOOLGUARD_REDISSTORE_PREFIX"
	envCalls  = "TOOLGUARD_REDISSTORE_CALLS"
	envLimit  = "TOOLGUARD_REDISSTORE_LIMIT"
	envStart  = "TOOLGUARD_REDISSTORE_START" // unix ms: when to begin
)

// TestMultiProcess runs this test binary as four processes that share one
// quota through the server: the calls they allow add up to the limit.
func TestMultiProcess(t *testing.T) {
	url := shared.URL(t)
	admin := newClient(t, url)
	prefix := uniquePrefix(t, admin)
	const procs, calls, limit = 4, 60, 100
	total := runChildren(t, procs, calls, limit, redistest.EnvURL+"="+url, envPrefix+"="+prefix)
	assert.Equal(t, limit, total, "the processes together allowed exactly the limit")
	s := redisstore.New(admin, redisstore.WithPrefix(prefix))
	n, err := s.Count(context.Background(), "quota:fleet")
	require.NoError(t, err)
	assert.Equal(t, limit, n)
	assert.Equal(t, []string{ckey(prefix, "quota:fleet")}, namespaceKeys(t, admin, prefix))
}

// TestClusterMultiProcess: two processes share a quota through the
// cluster.
func TestClusterMultiProcess(t *testing.T) {
	addrs := sharedCluster.Addrs(t)
	admin := newClusterClient(t, addrs)
	prefix := clusterPrefix(t, admin)
	const procs, calls, limit = 2, 400, 500
	total := runChildren(t, procs, calls, limit, redistest.EnvCluster+"="+strings.Join(addrs, ","), envPrefix+"="+prefix)
	t.Logf("cluster, limit %d, %d processes × 8 goroutines, %d calls: %d allowed", limit, procs, procs*calls, total)
	assert.Equal(t, limit, total, "the processes together allowed exactly the limit")
	s := redisstore.New(admin, redisstore.WithPrefix(prefix))
	n, err := s.Count(context.Background(), "quota:fleet")
	require.NoError(t, err)
	assert.Equal(t, limit, n)
	assert.ElementsMatch(t, []string{ckey(prefix, "quota:fleet")}, clusterKeys(t, admin, prefix))
}

// runChildren runs procs children (TestChildProcess) with env, started
// together, and returns the sum of the calls they allowed.
func runChildren(t *testing.T, procs, calls, limit int, env ...string) int {
	start := time.Now().Add(500 * time.Millisecond).UnixMilli()
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, procs)
	for i := 0; i < procs; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envChild+"=1",
			envCalls+"="+strconv.Itoa(calls), envLimit+"="+strconv.Itoa(limit),
			envStart+"="+strconv.FormatInt(start, 10))
		cmd.Env = append(cmd.Env, env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				errs[i] = fmt.Errorf("child %d: %v\n%s", i, err, out.String())
				return
			}
			n, err := parseAllowed(out.String())
			if err != nil {
				errs[i] = fmt.Errorf("child %d: %v\n%s", i, err, out.String())
				return
			}
			t.Logf("child %d allowed %d of %d calls", i, n, calls)
			total.Add(int64(n))
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return int(total.Load())
}

func parseAllowed(out string) (int, error) {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "allowed="); ok {
			return strconv.Atoi(rest)
		}
	}
	return 0, fmt.Errorf("no allowed= line")
}

// TestChildProcess is one process of TestMultiProcess: two Trackers, eight
// goroutines, the calls given by the parent; it prints allowed=N.
func TestChildProcess(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("runs only as a child process of TestMultiProcess")
	}
	calls, _ := strconv.Atoi(os.Getenv(envCalls))
	limit, _ := strconv.Atoi(os.Getenv(envLimit))
	startMs, _ := strconv.ParseInt(os.Getenv(envStart), 10, 64)
	var c redis.UniversalClient
	if addrs := os.Getenv(redistest.EnvCluster); addrs != "" {
		c = newClusterClient(t, strings.Split(addrs, ","))
	} else {
		c = newClient(t, shared.URL(t))
	}
	s := redisstore.New(c, redisstore.WithPrefix(os.Getenv(envPrefix)))
	trackers := []*toolguard.Tracker{toolguard.NewTracker(fleetPolicy(s, limit)), toolguard.NewTracker(fleetPolicy(s, limit))}
	time.Sleep(time.Until(time.UnixMilli(startMs)))

	var allowed, unexpected atomic.Int32
	var next atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= calls {
					return
				}
				ok, d := runCall(trackers[g%2], callN("t", i))
				switch {
				case ok:
					allowed.Add(1)
				case d.Reason != toolguard.ReasonToolLimit || errors.Is(d.Err, store.ErrUnavailable):
					unexpected.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	require.NoError(t, s.Flush(context.Background()))
	require.Zero(t, unexpected.Load(), "calls refused for another reason than the quota")
	fmt.Printf("allowed=%d\n", allowed.Load())
}
