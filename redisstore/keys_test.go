package redisstore_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/redisstore/internal/redistest"

	"github.com/toolguard/toolguard/store"
)

// TestDocumentedCommands pins issue 16 item 8: a quota name was escaped
// twice, so the redis-cli commands of docs/distributed.md found nothing
// and Store.Count returned 0. It runs those commands, as written there,
// against a real server with the default prefix.
func TestDocumentedCommands(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-cli is required under CI=true")
		}
		t.Skip("skipping: no redis-cli")
	}
	srv := redistest.Start(t)
	c := newClient(t, srv.URL())
	s := redisstore.New(c)
	tr := toolguard.NewTracker(toolguard.Policy{
		Store:        s,
		SharedQuotas: []store.SharedQuota{{Name: "tenant:acme:hourly", Limit: 10}},
	})
	for i := 0; i < 3; i++ {
		ok, d := runCall(tr, callN("web_fetch", i))
		require.True(t, ok, "%+v", d)
	}
	require.NoError(t, s.Flush(context.Background()))
	// One allowed call still running holds a reservation.
	require.Equal(t, toolguard.Allow, tr.ShouldSkip(callN("web_fetch", 99)).Verdict)

	redisCLI := func(command string) string {
		t.Helper()
		args := []string{"-u", srv.URL()}
		for _, f := range strings.Fields(strings.TrimPrefix(command, "redis-cli ")) {
			args = append(args, strings.Trim(f, "'")) // the shell's quotes
		}
		out, err := exec.Command(cli, args...).CombinedOutput()
		require.NoError(t, err, "%s: %s", command, out)
		return strings.TrimSpace(string(out))
	}
	// The commands of docs/distributed.md ("Key layout").
	assert.Equal(t, "3", redisCLI("redis-cli GET 'toolguard:{quota:tenant:acme:hourly}:c'"))
	assert.Equal(t, "1", redisCLI("redis-cli ZCARD 'toolguard:{quota:tenant:acme:hourly}:z'"))
	n, err := s.Count(context.Background(), "quota:tenant:acme:hourly")
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	assert.Equal(t, "quota:tenant:acme:hourly", store.SharedQuota{Name: "tenant:acme:hourly"}.Key("web_fetch"))

	redisCLI("redis-cli DEL 'toolguard:{quota:tenant:acme:hourly}:c' 'toolguard:{quota:tenant:acme:hourly}:z'")
	n, err = s.Count(context.Background(), "quota:tenant:acme:hourly")
	require.NoError(t, err)
	assert.Zero(t, n, "the documented reset")
	for i := 3; i < 13; i++ {
		ok, _ := runCall(tr, callN("web_fetch", i))
		require.True(t, ok, "the quota starts over")
	}
}
