package redisstore_test

import (
	"context"
	"fmt"
	"strings"
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
		{"total is a hash", func(c *redis.Client, p string) error { return c.HSet(ctx, p+"c:k", "f", "v").Err() }, "c:k holds a hash, not a count"},
		{"total is a list", func(c *redis.Client, p string) error { return c.RPush(ctx, p+"c:k", "1").Err() }, "c:k holds a list, not a count"},
		{"total is text", func(c *redis.Client, p string) error { return c.Set(ctx, p+"c:k", "abc", 0).Err() }, "c:k holds a string that is not a count"},
		{"total is negative", func(c *redis.Client, p string) error { return c.Set(ctx, p+"c:k", "-3", 0).Err() }, "not a count"},
		{"total is a fraction", func(c *redis.Client, p string) error { return c.Set(ctx, p+"c:k", "1.5", 0).Err() }, "not a count"},
		{"total is empty", func(c *redis.Client, p string) error { return c.Set(ctx, p+"c:k", "", 0).Err() }, "not a count"},
		{"total overflows", func(c *redis.Client, p string) error {
			return c.Set(ctx, p+"c:k", "99999999999999999999", 0).Err()
		}, "not a count"},
		{"reservations are a string", func(c *redis.Client, p string) error { return c.Set(ctx, p+"z:k", "1", 0).Err() }, "z:k holds a string, not a sorted set"},
		{"reservations are a set", func(c *redis.Client, p string) error { return c.SAdd(ctx, p+"z:k", "x").Err() }, "z:k holds a set, not a sorted set"},
		{"reservation record is a hash", func(c *redis.Client, p string) error { return c.HSet(ctx, p+"r:id", "f", "v").Err() }, "r:id holds a hash, not a reservation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c, prefix := setup(t)
			require.NoError(t, tc.plant(c, prefix))
			before := dump(t, c, prefix)

			_, err := s.Reserve(ctx, store.Reservation{ID: "id", Counters: two})
			require.ErrorIs(t, err, redisstore.ErrMalformed)
			assert.True(t, strings.HasPrefix(err.Error(), "redisstore: reserve: malformed key: "+prefix), err.Error())
			assert.Contains(t, err.Error(), tc.detail)
			assert.Equal(t, before, dump(t, c, prefix), "a failed reservation changes nothing, not even the good counter")

			if !strings.HasPrefix(tc.name, "reservation record") {
				_, err = s.Count(ctx, "k")
				require.ErrorIs(t, err, redisstore.ErrMalformed)
			}
		})
	}
}

func TestMalformedReservationRecord(t *testing.T) {
	ctx := context.Background()
	t.Run("a record naming foreign keys", func(t *testing.T) {
		s, c, prefix := setup(t)
		victim := prefix + "victim" // inside the prefix, but no counter key
		require.NoError(t, c.Set(ctx, victim, "7", 0).Err())
		require.NoError(t, c.RPush(ctx, prefix+"r:id", victim, prefix+"z:k").Err())
		for _, op := range []func(context.Context, string) error{s.Commit, s.Release} {
			err := op(ctx, "id")
			require.ErrorIs(t, err, redisstore.ErrMalformed)
			assert.Contains(t, err.Error(), "r:id is not a reservation")
		}
		v, _ := c.Get(ctx, victim).Result()
		assert.Equal(t, "7", v)
		assert.Equal(t, int64(1), c.Exists(ctx, prefix+"r:id").Val(), "the record is left for the operator")
	})
	t.Run("a record of odd length", func(t *testing.T) {
		s, c, prefix := setup(t)
		require.NoError(t, c.RPush(ctx, prefix+"r:id", prefix+"c:k").Err())
		require.ErrorIs(t, s.Commit(ctx, "id"), redisstore.ErrMalformed)
	})
	t.Run("a record that is a string", func(t *testing.T) {
		s, c, prefix := setup(t)
		require.NoError(t, c.Set(ctx, prefix+"r:id", "x", 0).Err())
		require.ErrorIs(t, s.Release(ctx, "id"), redisstore.ErrMalformed)
	})
	t.Run("a total spoiled while a reservation is open", func(t *testing.T) {
		s, c, prefix := setup(t)
		k := []store.Counter{{Key: "k", Limit: 10}}
		_, err := s.Reserve(ctx, store.Reservation{ID: "id", Counters: k})
		require.NoError(t, err)
		require.NoError(t, c.Del(ctx, prefix+"c:k").Err())
		require.NoError(t, c.HSet(ctx, prefix+"c:k", "f", "v").Err())
		before := dump(t, c, prefix)
		err = s.Commit(ctx, "id")
		require.ErrorIs(t, err, redisstore.ErrMalformed)
		assert.Equal(t, before, dump(t, c, prefix), "a failed commit changes nothing")
		// Once the operator removes the foreign key the commit goes through.
		require.NoError(t, c.Del(ctx, prefix+"c:k").Err())
		require.NoError(t, s.Commit(ctx, "id"))
		n, err := s.Count(ctx, "k")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})
}

// TestMalformedKeyThroughTracker: the Tracker treats a malformed key as
// a store failure: refused when failing closed, allowed and reported when
// failing open.
func TestMalformedKeyThroughTracker(t *testing.T) {
	s, c, prefix := setup(t)
	require.NoError(t, c.HSet(context.Background(), prefix+"c:quota:fleet", "f", "v").Err())

	tr := toolguard.NewTracker(fleetPolicy(s, 5))
	ok, d := runCall(tr, callN("t", 1))
	require.False(t, ok)
	assert.Equal(t, toolguard.Abort, d.Verdict)
	require.ErrorIs(t, d.Err, toolguard.ErrStoreUnavailable)
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
