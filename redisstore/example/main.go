// Command example is one replica of an agent service whose replicas share
// one budget of image generations through Redis. Start a server and two
// replicas against it:
//
//	redis-server --port 6390 --save '' --appendonly no --daemonize yes
//	go run ./example -redis redis://127.0.0.1:6390/0 -name a -calls 8 &
//	go run ./example -redis redis://127.0.0.1:6390/0 -name b -calls 8; wait
//
// Together they run 10 generations (the -limit) and no more, whichever
// replica asks first; the budget starts again a minute after its first
// call. Each refused call prints the text the model would get instead of
// the tool's result.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"

	"github.com/toolguard/toolguard/store"
)

// config is what the flags set.
type config struct {
	url    string
	name   string
	calls  int
	limit  int
	budget string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.url, "redis", "redis://127.0.0.1:6379/0", "the Redis URL")
	flag.StringVar(&cfg.name, "name", "replica", "this replica's name, printed with its lines")
	flag.IntVar(&cfg.calls, "calls", 8, "how many generations this replica's model asks for")
	flag.IntVar(&cfg.limit, "limit", 10, "generations allowed to the whole fleet per minute")
	flag.StringVar(&cfg.budget, "budget", "example:images", "the shared quota's name")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

// run plays one replica and returns how many calls ran.
func run(ctx context.Context, w io.Writer, cfg config) (int, error) {
	opts, err := redis.ParseURL(cfg.url)
	if err != nil {
		return 0, err
	}
	opts.ContextTimeoutEnabled = true // Policy.StoreTimeout bounds every store call
	opts.DialTimeout = time.Second
	opts.ReadTimeout = 500 * time.Millisecond
	opts.WriteTimeout = 500 * time.Millisecond
	client := redis.NewClient(opts)
	defer client.Close()

	st := redisstore.New(client)
	// Commits are sent in the background: send the last ones before the
	// client closes (deferred calls run last first).
	defer st.Flush(context.WithoutCancel(ctx))
	quota := store.SharedQuota{
		Name:   cfg.budget,
		Tools:  []string{"generate_image"},
		Limit:  cfg.limit,
		Window: time.Minute,
	}
	tracker := toolguard.NewTracker(toolguard.Policy{
		Store:           st,
		SharedQuotas:    []store.SharedQuota{quota},
		SessionLimit:    -1,
		StoreTimeout:    250 * time.Millisecond,
		MaxCallsPerTurn: -1, // the shared budget is the only limit here
	})
	generate := func(ctx context.Context, c toolguard.Call) (string, error) {
		return "image ready", nil // a paid API in a real service
	}

	ran := 0
calls:
	for i := 1; i <= cfg.calls; i++ {
		c := toolguard.Call{
			ID:   fmt.Sprintf("%s-%d", cfg.name, i),
			Tool: "generate_image",
			Args: []byte(fmt.Sprintf(`{"prompt":"a lighthouse at dusk, variant %d"}`, i)),
		}
		r := tracker.Run(ctx, c, generate)
		switch {
		case errors.Is(r.Err, store.ErrUnavailable):
			return ran, r.Err
		case r.Err != nil:
			fmt.Fprintf(w, "%s: call %d aborted: %v\n", cfg.name, i, r.Err)
			return ran, nil
		case r.Decision.Skip():
			// The model gets this text instead of an image and wraps up.
			fmt.Fprintf(w, "%s: call %d skipped; the model reads: %s\n", cfg.name, i, r.Text)
			break calls
		default:
			ran++
			fmt.Fprintf(w, "%s: call %d ran\n", cfg.name, i)
		}
	}
	used, err := st.Count(ctx, quota.Key("generate_image"))
	if err != nil {
		return ran, err
	}
	fmt.Fprintf(w, "%s: %d of %d calls ran; the fleet has used %d of %d\n", cfg.name, ran, cfg.calls, used, cfg.limit)
	return ran, nil
}
