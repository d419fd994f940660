// Package client is the Go client of the policy server (package externalenv/server, `sample
// serve`): a simulator written in Go runs its episodes over HTTP with the same calls as
// externalenv's in-process API.
//
// # Usage
//
//	c, err := client.New("http://127.0.0.1:8900", client.Options{})
//	id, err := c.StartEpisode(ctx, "", true)
//	for !done {
//		act, err := c.GetAction(ctx, id, obs) // the server's sampler answers
//		...                                   // step the simulator with act
//		err = c.LogReturns(ctx, id, reward, nil)
//	}
//	err = c.EndEpisode(ctx, id, finalObs)
//
//	acts, err := c.Act(ctx, [][]float32{obs1, obs2}, nil) // stateless batched inference
//
// Observations and actions are flat []float32 in the raw layout of their space (package
// spaces); the client reads the server's spaces from /v1/spaces once, to decode actions.
// EndEpisodeTruncated ends an episode cut short (a time limit).
//
// A multi-agent server (`sample serve --multi-agent`) takes maps keyed by agent id:
//
//	ma := c.MultiAgent()
//	acts, err := ma.GetAction(ctx, id, map[string][]float32{"a0": obs0, "a1": obs1})
//	err = ma.LogReturns(ctx, id, map[string]float64{"a0": 1, "a1": -1}, map[string]bool{"a1": true}, nil)
//	err = ma.EndEpisode(ctx, id, map[string][]float32{"a0": final0})
//
// # Errors
//
// An error answer is an *Error with the status, the server's code and message; errors.Is
// matches it against externalenv's sentinel errors, so code written against the in-process
// API keeps working:
//
//	_, err := c.GetAction(ctx, id, obs)
//	switch {
//	case errors.Is(err, externalenv.ErrEpisodeNotFound): // 404
//	case errors.Is(err, externalenv.ErrEpisodeDone):     // 409
//	case errors.Is(err, externalenv.ErrBadObservation):  // 400
//	case errors.Is(err, externalenv.ErrTooManyEpisodes): // 429
//	case errors.Is(err, externalenv.ErrStopped):         // 503: the server is shutting down
//	}
//
// # Connections
//
// A Client keeps its connections alive (Options.MaxIdleConnsPerHost, 256 by default) and is
// safe for concurrent use: share one between the simulator's goroutines.
package client
