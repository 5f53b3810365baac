package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/redisstore/internal/redistest"
	"github.com/toolguard/toolguard/store"
)

// shared is the server most tests use: TOOLGUARD_REDIS_URL, or one
// started for this test binary.
var shared *redistest.Shared

// sharedCluster is the cluster the cluster tests share (those that break
// a cluster start their own): TOOLGUARD_REDIS_CLUSTER, or one started on
// first use.
var sharedCluster redistest.SharedCluster

// findLeaks reports goroutines still running 3s from now at the latest:
// after a client is closed, go-redis may need a second to end the
// goroutine that probes a server that went away.
func findLeaks(opts ...goleak.Option) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// quiet drops go-redis's own log lines (failed dials while a test has
// killed its server).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	shared = redistest.StartShared()
	code := m.Run()
	shared.Close()
	sharedCluster.Close()
	if code == 0 {
		if err := findLeaks(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines leaked: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newClient connects to url the way the docs recommend: the context
// bounds every call, and the timeouts are short.
func newClient(tb testing.TB, url string) *redis.Client {
	tb.Helper()
	opts, err := redis.ParseURL(url)
	require.NoError(tb, err)
	opts.ContextTimeoutEnabled = true
	opts.DialTimeout = time.Second
	opts.ReadTimeout = time.Second
	opts.WriteTimeout = time.Second
	c := redis.NewClient(opts)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// uniquePrefix returns a key prefix no other test uses, and removes the
// prefix's keys when the test ends.
func uniquePrefix(tb testing.TB, c *redis.Client) string {
	tb.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "tgtest:" + hex.EncodeToString(b[:]) + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return prefix
}

// setup returns a Store on the shared server under a fresh prefix, with
// its client and prefix.
func setup(tb testing.TB) (*redisstore.Store, *redis.Client, string) {
	tb.Helper()
	c := newClient(tb, shared.URL(tb))
	prefix := uniquePrefix(tb, c)
	return redisstore.New(c, redisstore.WithPrefix(prefix)), c, prefix
}

// namespaceKeys returns the keys under prefix.
func namespaceKeys(t *testing.T, c *redis.Client, prefix string) []string {
	t.Helper()
	keys, err := c.Keys(context.Background(), prefix+"*").Result()
	require.NoError(t, err)
	return keys
}

// fleetPolicy is a policy whose only limit is the shared quota "fleet".
func fleetPolicy(s store.Store, limit int) toolguard.Policy {
	return toolguard.Policy{
		Store:           s,
		SharedQuotas:    []store.SharedQuota{{Name: "fleet", Limit: limit}},
		SessionLimit:    -1,
		StoreTimeout:    2 * time.Second,
		MaxCallsPerTurn: -1,
	}
}

// callN is a call that no loop rule treats as a repeat of another.
func callN(tool string, i int) toolguard.Call {
	return toolguard.Call{ID: fmt.Sprintf("c%d", i), Tool: tool, Args: []byte(fmt.Sprintf(`{"n":%d}`, i))}
}

// runCall checks the call and, when allowed, records it; it reports
// whether the call ran.
func runCall(t *toolguard.Tracker, c toolguard.Call) (bool, toolguard.Decision) {
	d := t.ShouldSkip(c)
	if d.Verdict != toolguard.Allow {
		return false, d
	}
	t.Record(c, toolguard.Outcome{Result: "ok"})
	return true, d
}

// reserve asks s for one reservation.
func reserve(ctx context.Context, s store.Store, r store.Reservation) (store.Grant, error) {
	gs, err := s.Reserve(ctx, []store.Reservation{r})
	if err != nil {
		return store.Grant{}, err
	}
	return gs[0], nil
}

// commit commits rs and waits until the server applied them.
func commit(tb testing.TB, s *redisstore.Store, rs ...store.Reservation) {
	tb.Helper()
	require.NoError(tb, s.Commit(context.Background(), rs))
	require.NoError(tb, s.Flush(context.Background()))
}

// release releases rs and waits until the server applied them.
func release(tb testing.TB, s *redisstore.Store, rs ...store.Reservation) {
	tb.Helper()
	require.NoError(tb, s.Release(context.Background(), rs))
	require.NoError(tb, s.Flush(context.Background()))
}

// ckey and zkey return the keys of counter k under prefix.
func ckey(prefix, k string) string { return prefix + "{" + k + "}:c" }
func zkey(prefix, k string) string { return prefix + "{" + k + "}:z" }
