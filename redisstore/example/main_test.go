package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/redisstore/internal/redistest"

	"github.com/toolguard/toolguard/store"
)

// TestTwoReplicas runs the example's logic as two replicas at once
// against a real server: together they run exactly the limit.
func TestTwoReplicas(t *testing.T) {
	url := redistest.URL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	budget := "example-test:" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		opts, err := redis.ParseURL(url)
		if err != nil {
			return
		}
		c := redis.NewClient(opts)
		defer c.Close()
		c.Del(context.Background(), redisstore.DefaultPrefix+"c:"+store.SharedQuota{Name: budget}.Key(""))
	})

	outs := make([]bytes.Buffer, 2)
	ran := make([]int, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ran[i], errs[i] = run(context.Background(), &outs[i], config{url: url, name: name, calls: 8, limit: 10, budget: budget})
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Equal(t, 10, ran[0]+ran[1], "%s\n%s", &outs[0], &outs[1])

	all := outs[0].String() + outs[1].String()
	t.Log("\n" + all)
	for i := range outs {
		skips := strings.Count(outs[i].String(), "skipped; the model reads: "+toolguard.HintMarker)
		if ran[i] < 8 {
			assert.Equal(t, 1, skips, "a replica that hit the limit tells its model once")
		} else {
			assert.Zero(t, skips)
		}
	}
	assert.Contains(t, all, "has reached the shared quota '"+budget+"' (10 calls, 10 made by every session that shares it)")
	assert.Contains(t, all, "the fleet has used 10 of 10")
}

func TestBadURL(t *testing.T) {
	_, err := run(context.Background(), &bytes.Buffer{}, config{url: "http://nope", name: "a", calls: 1, limit: 1, budget: "x"})
	require.Error(t, err)
}
