package redisstore_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/store"
)

// BenchmarkReserve measures the store traffic of one allowed call, a
// Reserve and its Commit, from 1, 8 and 64 goroutines sharing one client
// and one counter, against the real server. reservations/s counts settled
// reservations per second of wall time.
func BenchmarkReserve(b *testing.B) {
	url := shared.URL(b)
	for _, goroutines := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			opts, err := redis.ParseURL(url)
			require.NoError(b, err)
			opts.ContextTimeoutEnabled = true
			opts.PoolSize = max(goroutines, 10)
			c := redis.NewClient(opts)
			b.Cleanup(func() { _ = c.Close() })
			prefix := uniquePrefix(b, c)
			s := redisstore.New(c, redisstore.WithPrefix(prefix))
			benchPairs(b, s, goroutines, []store.Counter{{Key: "quota:bench", Limit: math.MaxInt32}})
		})
	}
}

// BenchmarkReserveCluster is BenchmarkReserve on the cluster (3 masters):
// each call takes one unit of a shared counter and of one of 16 others
// (a tenant's), so a call's counters are often on two masters.
func BenchmarkReserveCluster(b *testing.B) {
	addrs := sharedCluster.Addrs(b)
	for _, goroutines := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true, PoolSize: max(goroutines, 10)})
			b.Cleanup(func() { _ = c.Close() })
			prefix := clusterPrefix(b, c)
			s := redisstore.New(c, redisstore.WithPrefix(prefix))
			benchPairs(b, s, goroutines, []store.Counter{
				{Key: "quota:bench", Limit: math.MaxInt32},
				{Key: "quota:tenant", Limit: math.MaxInt32},
			})
		})
	}
}

// benchPairs runs Reserve+Commit pairs from goroutines; with two
// counters, the second one's key ends with the pair's number modulo 16.
func benchPairs(b *testing.B, s *redisstore.Store, goroutines int, counters []store.Counter) {
	ctx := context.Background()

	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				cs := counters
				if len(cs) == 2 {
					cs = []store.Counter{counters[0], {Key: counters[1].Key + strconv.FormatInt(i%16, 10), Limit: counters[1].Limit}}
				}
				r := []store.Reservation{{ID: strconv.FormatInt(i, 10), Counters: cs}}
				gr, err := s.Reserve(ctx, r)
				if err != nil || !gr[0].OK {
					b.Errorf("reserve: %v %+v", err, gr)
					return
				}
				if err := s.Commit(ctx, r); err != nil {
					b.Errorf("commit: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(b, s.Flush(ctx)) // the last commits are part of the work
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkRoundTrip is the floor under BenchmarkReserve: one PING from
// one goroutine through the same kind of client.
func BenchmarkRoundTrip(b *testing.B) {
	opts, err := redis.ParseURL(shared.URL(b))
	require.NoError(b, err)
	opts.ContextTimeoutEnabled = true
	c := redis.NewClient(opts)
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pings/s")
}
