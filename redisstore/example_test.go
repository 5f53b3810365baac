package redisstore_test

import (
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"

	"github.com/toolguard/toolguard/store"
)

// Every replica of a service builds its Tracker this way; together they
// run at most 500 calls of web tools per tenant and hour.
func Example() {
	opts, err := redis.ParseURL("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	opts.ContextTimeoutEnabled = true // Policy.StoreTimeout bounds every call
	opts.DialTimeout = time.Second
	opts.ReadTimeout, opts.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
	client := redis.NewClient(opts)
	defer client.Close()

	tracker := toolguard.NewTracker(toolguard.Policy{
		Store: redisstore.New(client),
		SharedQuotas: []store.SharedQuota{{
			Name: "tenant:acme:hourly", Tools: []string{"web_*"}, Limit: 500, Window: time.Hour,
		}},
		StoreTimeout:   250 * time.Millisecond,
		ReservationTTL: 5 * time.Minute, // a crashed replica's reservations return after this
		FailOpen:       false,           // refuse calls while Redis is unreachable
	})
	d := tracker.ShouldSkip(toolguard.Call{Tool: "web_fetch", Args: []byte(`{"url":"https://example.org"}`)})
	fmt.Println(d.Verdict)
}
