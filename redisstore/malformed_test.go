package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/store"
)

// TestMalformedKeys: a key of the namespace holding something the store
// did not write is reported, and the operation changes nothing.
func TestMalformedKeys(t *testing.T) {
	ctx := context.Background()
	two := []store.Counter{{Key: "good", Limit: 10}, {Key: "k", Limit: 10}}
	cases := []struct {
		name   string
		plant  func(c *redis.Client, p string) error
		detail string // in the error
	}{
		{"total is a hash", func(c *redis.Client, p string) error { return c.HSet(ctx, p+"{k}:c", "f", "v").Err() }, "{k}:c holds a hash, not a count"},
		{"total is a list", func(c *redis.Client, p string) error { return c.RPush(ctx, p+"{k}:c", "1").Err() }, "{k}:c holds a list, not a count"},
		{"total is text", func(c *redis.Client, p string) error { return c.Set(ctx, p+"{k}:c", "abc", 0).Err() }, "{k}:c holds a string that is not a count"},
		{"total is negative", func(c *redis.Client, p string) error { return c.Set(ctx, p+"{k}:c", "-3", 0).Err() }, "not a count"},
		{"total is a fraction", func(c *redis.Client, p string) error { return c.Set(ctx, p+"{k}:c", "1.5", 0).Err() }, "not a count"},
		{"total is empty", func(c *redis.Client, p string) error { return c.Set(ctx, p+"{k}:c", "", 0).Err() }, "not a count"},
		{"total overflows", func(c *redis.Client, p string) error {
			return c.Set(ctx, p+"{k}:c", "99999999999999999999", 0).Err()
		}, "not a count"},
		{"reservations are a string", func(c *redis.Client, p string) error { return c.Set(ctx, p+"{k}:z", "1", 0).Err() }, "{k}:z holds a string, not a sorted set"},
		{"reservations are a set", func(c *redis.Client, p string) error { return c.SAdd(ctx, p+"{k}:z", "x").Err() }, "{k}:z holds a set, not a sorted set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c, prefix := setup(t)
			require.NoError(t, tc.plant(c, prefix))
			before := dump(t, c, prefix)

			_, err := reserve(ctx, s, store.Reservation{ID: "id", Counters: two})
			require.ErrorIs(t, err, redisstore.ErrMalformed)
			assert.True(t, strings.HasPrefix(err.Error(), "redisstore: reserve: malformed key: "+prefix), err.Error())
			assert.Contains(t, err.Error(), tc.detail)
			assert.Equal(t, before, dump(t, c, prefix), "a failed reservation changes nothing, not even the good counter")

			_, err = s.Count(ctx, "k")
			require.ErrorIs(t, err, redisstore.ErrMalformed)
		})
	}
}

// TestMalformedKeyInBackground: a commit that finds a malformed key is
// reported by the background callback and by Flush, and changes nothing;
// once the operator removes the foreign key a commit goes through.
func TestMalformedKeyInBackground(t *testing.T) {
	c := newClient(t, shared.URL(t))
	prefix := uniquePrefix(t, c)
	var mu sync.Mutex
	var reported []error
	s := redisstore.New(c, redisstore.WithPrefix(prefix), redisstore.OnBackgroundError(func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}))
	ctx := context.Background()
	r := store.Reservation{ID: "id", Counters: []store.Counter{{Key: "k", Limit: 10}}}
	_, err := reserve(ctx, s, r)
	require.NoError(t, err)
	require.NoError(t, c.Del(ctx, prefix+"{k}:c").Err())
	require.NoError(t, c.HSet(ctx, prefix+"{k}:c", "f", "v").Err())
	before := dump(t, c, prefix)

	require.NoError(t, s.Commit(ctx, []store.Reservation{r}), "queued")
	err = s.Flush(ctx)
	require.ErrorIs(t, err, redisstore.ErrMalformed)
	assert.Contains(t, err.Error(), "1 background sends failed")
	assert.Contains(t, err.Error(), "background send of 1 commits and 0 releases")
	assert.Contains(t, err.Error(), prefix+"{k}:c holds a hash, not a count")
	mu.Lock()
	require.Len(t, reported, 1)
	require.ErrorIs(t, reported[0], redisstore.ErrMalformed)
	mu.Unlock()
	assert.Equal(t, before, dump(t, c, prefix), "a failed commit changes nothing")
	require.NoError(t, s.Flush(ctx), "Flush reports a failure once")

	require.NoError(t, c.Del(ctx, prefix+"{k}:c").Err())
	commit(t, s, r)
	n, err := s.Count(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// TestMalformedKeyThroughTracker: the Tracker treats a malformed key as
// a store failure: refused when failing closed, allowed and reported when
// failing open.
func TestMalformedKeyThroughTracker(t *testing.T) {
	s, c, prefix := setup(t)
	require.NoError(t, c.HSet(context.Background(), ckey(prefix, "quota:fleet"), "f", "v").Err())

	tr := toolguard.NewTracker(fleetPolicy(s, 5))
	ok, d := runCall(tr, callN("t", 1))
	require.False(t, ok)
	assert.Equal(t, toolguard.Hint, d.Verdict)
	require.ErrorIs(t, d.Err, store.ErrUnavailable)
	require.ErrorIs(t, d.Err, redisstore.ErrMalformed)

	var events []toolguard.Event
	p := fleetPolicy(s, 5)
	p.FailOpen = true
	p.OnEvent = func(e toolguard.Event) {
		if e.Kind == toolguard.EventStore {
			events = append(events, e)
		}
	}
	ok, _ = runCall(toolguard.NewTracker(p), callN("t", 2))
	assert.True(t, ok)
	require.Len(t, events, 1)
	require.ErrorIs(t, events[0].Err, redisstore.ErrMalformed)
}

// dump returns every key under prefix with its type and value.
func dump(t *testing.T, c *redis.Client, prefix string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, k := range namespaceKeys(t, c, prefix) {
		typ := c.Type(ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v = c.Get(ctx, k).Val()
		case "hash":
			v = c.HGetAll(ctx, k).Val()
		case "list":
			v = c.LRange(ctx, k, 0, -1).Val()
		case "set":
			v = c.SMembers(ctx, k).Val()
		case "zset":
			v = c.ZRangeWithScores(ctx, k, 0, -1).Val()
		}
		out[k] = typ + " " + fmt.Sprint(v)
	}
	return out
}
