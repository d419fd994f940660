// Command cartpole_client runs CartPole episodes through a policy server (`sample serve`):
// the simulator (env/classic's CartPole-v1) steps itself and asks the server for each action
// over HTTP with the Go client, then prints the mean return.
//
//	sample serve --explore=false &        # the bundled CartPole policy on 127.0.0.1:8900
//	go run ./examples/cartpole_client --episodes 20 --clients 4
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/externalenv/client"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cartpole_client:", err)
		os.Exit(1)
	}
}

// result is what run measured.
type result struct {
	episodes int
	steps    int
	returns  []float64
}

func (r *result) mean() float64 {
	if len(r.returns) == 0 {
		return 0
	}
	sum := 0.0
	for _, v := range r.returns {
		sum += v
	}
	return sum / float64(len(r.returns))
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cartpole_client", flag.ContinueOnError)
	server := fs.String("server", "http://127.0.0.1:8900", "the policy server's URL")
	episodes := fs.Int("episodes", 10, "episodes to run in all")
	clients := fs.Int("clients", 1, "simulators running episodes at once")
	seed := fs.Uint64("seed", 0, "episode i resets CartPole with seed+i")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *episodes < 1 || *clients < 1 {
		return errors.New("--episodes and --clients must be at least 1")
	}
	c, err := client.New(*server, client.Options{MaxIdleConnsPerHost: *clients})
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	res, err := runEpisodes(context.Background(), c, *episodes, *clients, *seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d episodes, %d steps, mean return %.2f\n", res.episodes, res.steps, res.mean())
	return nil
}

// runEpisodes runs n episodes on `clients` goroutines.
func runEpisodes(ctx context.Context, c *client.Client, n, clients int, seed uint64) (*result, error) {
	res := &result{returns: make([]float64, n)}
	var mu sync.Mutex
	next := 0
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				ret, steps, err := episode(ctx, c, seed+uint64(i))
				if err != nil {
					errs[g] = fmt.Errorf("episode %d: %w", i, err)
					return
				}
				mu.Lock()
				res.returns[i] = ret
				res.steps += steps
				res.episodes++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res, errors.Join(errs...)
}

// episode runs one CartPole-v1 episode through the server and returns its return.
func episode(ctx context.Context, c *client.Client, seed uint64) (float64, int, error) {
	cp, err := classic.NewCartPole(nil)
	if err != nil {
		return 0, 0, err
	}
	obs, next := make([]float32, 4), make([]float32, 4)
	if _, err := cp.Reset(env.WithSeed(seed), obs); err != nil {
		return 0, 0, err
	}
	id, err := c.StartEpisode(ctx, "", true)
	if err != nil {
		return 0, 0, err
	}
	ret := 0.0
	var act []float32
	for step := 1; ; step++ {
		if act, err = c.AppendAction(ctx, act[:0], id, obs); err != nil {
			return 0, 0, err
		}
		r, err := cp.Step(act, next)
		if err != nil {
			return 0, 0, err
		}
		ret += r.Reward
		if err := c.LogReturns(ctx, id, r.Reward, nil); err != nil {
			return 0, 0, err
		}
		obs, next = next, obs
		switch {
		case r.Terminated:
			return ret, step, c.EndEpisode(ctx, id, obs)
		case r.Truncated:
			return ret, step, c.EndEpisodeTruncated(ctx, id, obs)
		}
	}
}
