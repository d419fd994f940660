// Package server is the policy server: RLlib's PolicyServerInput as an http.Handler over an
// externalenv.ExternalEnv, so that simulators in any language run episodes against an ONNX
// policy with JSON over HTTP, while an envrunner.Runner answers every pending action request
// of a step with one batched inference and records sample batches. `sample serve` is the
// command-line front end; package externalenv/client is the Go client.
//
// # API
//
// Every body is JSON. Observations and actions are values of their space in the form of
// package wire: a flat array of numbers (the raw layout) is always accepted; actions come
// back as integers for a Discrete space and (nested) arrays of floats for a Box.
//
//	POST /v1/episodes                 {"episode_id"?: "...", "training_enabled"?: true}
//	                                  -> 201 {"episode_id": "..."} (a UUID unless given)
//	POST /v1/episodes/{id}/action     {"observation": [...]} -> 200 {"action": 1}
//	POST /v1/episodes/{id}/log_action {"observation": [...], "action": 1} -> 204
//	POST /v1/episodes/{id}/returns    {"reward": 1.0, "info"?: {...}} -> 204
//	POST /v1/episodes/{id}/end        {"observation": [...], "truncated"?: false} -> 204
//	POST /v1/act                      {"observations": [[...], ...], "explore"?: false}
//	                                  -> 200 {"actions": [1, 0, ...]}
//	GET  /v1/spaces                   -> {"observation_space": {...}, "action_space": {...},
//	                                      "multi_agent": false, "act": true}
//	GET  /healthz                     -> 200 {"status": "ok", "active_episodes": N}
//	GET  /metrics                     -> Prometheus text
//
// Each endpoint is an http.ServeMux method-and-path pattern (routes.go); a path of the API
// with another method gets 405 method_not_allowed with an Allow header, any other path 404
// not_found. {id} is the episode id as one path segment, escaped as the clients escape it
// (url.PathEscape, or Python's urllib.parse.quote with an empty safe; '/' as %2F): any id works but ".", ".." and
// "/", which cannot be one and are refused by /v1/episodes (400).
//
// The episode endpoints are ExternalEnv's methods (see package externalenv for their
// semantics): /action blocks until the sampler has answered; rewards logged with /returns
// are summed into the next observation's transition, and an info stays until replaced;
// /log_action records the simulator's own action, and waits while the episode's earlier
// logged observation is not answered yet (back-pressure: externalenv's MaxPendingLogs; 504
// after the env's timeout, the observation not recorded). /v1/act is stateless batched inference for simulators that batch themselves: it
// records nothing, and runs on its own sessions (an Actor), not through the sampler;
// "explore" overrides the server's default for one request. /end with "truncated": true ends
// an episode cut short (EndEpisodeTruncated: the sampler bootstraps from the final
// observation's value instead of zero).
//
// # Multi-agent
//
// With Options.MultiAgentEnv (`sample serve --multi-agent`) the episode endpoints take and
// give objects keyed by agent id, every agent sharing the observation and action spaces
// (see externalenv.ExternalMultiAgentEnv for the semantics):
//
//	POST /v1/episodes/{id}/action     {"observation": {"a0": [...], "a1": [...]}}
//	                                  -> 200 {"action": {"a0": 1, "a1": 0}}
//	POST /v1/episodes/{id}/log_action {"observation": {"a0": [...]}, "action": {"a0": 1}} -> 204
//	POST /v1/episodes/{id}/returns    {"reward": {"a0": 1.0, "a1": -1}, "done"?: {"a1": true},
//	                                   "info"?: {"a0": {...}}} -> 204
//	POST /v1/episodes/{id}/end        {"observation": {"a0": [...]}, "truncated"?: false} -> 204
//
// /returns takes rewards (summed per agent until its next observation), dones and infos as
// objects keyed by agent id; "rewards" and "dones", RLlib's names, are accepted as synonyms of
// "reward" and "done". An agent marked done observes at most once more (its final
// observation, which gets no action); the /action answer holds the agents that act. /end
// ends every agent that has not ended, those missing from its observations with their last
// observation repeated. /v1/act is the same as in single-agent mode (a batch of
// observations of the shared space).
//
// # Errors
//
// Errors are {"error": "...", "code": "..."} with these statuses and codes (the messages
// speak the protocol's words, never Go's):
//
//	400 bad_request         malformed JSON, a missing member, a reward (or a step's sum of
//	                        rewards) that is not finite or beyond float32, more agents than
//	                        Options.MaxAgents, an agent id
//	                        over MaxAgentIDBytes, an episode_id that cannot be a path
//	                        segment (".", "..", "/")
//	400 bad_observation     an observation not in the observation space (wrong length, NaN,
//	                        out of the space's bounds)
//	400 bad_action          a logged action not in the action space
//	401 unauthorized        Access.Token is set and the request lacks "Authorization: Bearer"
//	403 forbidden           a foreign Host (Access.LoopbackHost) or an Origin not allowed
//	404 episode_not_found   no episode with this id was started
//	404 not_found           no such endpoint (405 method_not_allowed: wrong method)
//	409 episode_exists      /v1/episodes with the id of a running episode
//	409 episode_done        the episode has ended (by its client, the idle timeout, or a
//	                        request that failed)
//	409 episode_busy        a second /action while one waits
//	413 body_too_large      a body over Options.MaxBodyBytes
//	415 unsupported_media_type  a POST without Content-Type: application/json
//	429 too_many_episodes   MaxConcurrentEpisodes episodes are running
//	500 internal            a handler panicked (its episode ends), or the sampler failed while
//	                        the request waited
//	501 not_implemented     /v1/act on a server without an Actor
//	503 unavailable         shutting down, the environment stopped, the server failed (Fail),
//	                        or too many body bytes in flight (Options.MaxBodiesInFlight)
//	504 timeout             no action within the ExternalEnv's Timeout
//
// A bad request changes nothing: the episode and the server go on.
//
// # Defences
//
// The server is meant to face clients that misbehave. Episodes without a request for
// Options.IdleTimeout (60 s) end as Close ends them (truncated, recorded, their slot freed;
// sample_serve_episodes_expired_total). The server keeps no copy of the episodes' state:
// the ExternalEnv knows each agent's last observation and when the episode was last called
// (externalenv's TruncateEpisode, TruncateIdle, TruncateAll), so an /action takes no lock
// shared by all episodes. Bodies are bounded one by one (MaxBodyBytes) and
// together (MaxBodiesInFlight). A panic in a request is a 500 and ends the request's episode;
// a panic in the sampler stops it with a *PanicError, and Fail then reports the reason on
// /healthz (503) while /v1/act goes on. Access keeps browsers out: only JSON bodies, an
// Origin only when allowed, a loopback Host on a loopback listener, and an optional bearer
// token (/healthz stays open for probes). `sample serve` adds read and write deadlines
// (--header-timeout, 5 s, for a connection to send its request's headers; --read-timeout,
// --write-timeout), connection limits in all and per address (--max-connections, 4,096;
// --max-connections-per-ip, 256: at a limit the oldest idle keep-alive connection makes room
// first, and a request in progress never does), and refuses to listen beyond loopback
// without --token unless --insecure.
//
// # Running a server
//
//	e, _ := externalenv.New(externalenv.Options{ObservationSpace: obs, ActionSpace: act})
//	srv, _ := server.New(server.Options{Env: e, Actor: actor}) // starts e's run loop
//	r, _ := envrunner.New(envrunner.Config{Env: srv.Metrics().ObservePolls(e), NumEnvs: e.NumEnvs(),
//		Policies: ...})
//	sampler := server.StartSampler(r, writer.Write) // nil: record nothing
//	hs := &http.Server{Handler: srv}
//	go hs.Serve(listener)
//	...
//	hs.Shutdown(ctx)      // stop accepting, let requests in flight finish
//	srv.Close()           // end open episodes (truncated), end the run loop
//	err := sampler.Wait() // the sampler polls what is left, writes its last fragment
//	r.Close(); writer.Close()
//
// Close ends each running episode that has reported an observation as truncated, with its
// last observation as the final one (each agent's last one in multi-agent mode), so every
// action the server answered becomes a row of the sample batches. Episodes without an
// observation leave nothing.
//
// # Performance
//
// Request bodies are read into pooled buffers and decoded in place (package wire:
// strconv on the body's bytes, no reflection), responses are appended into pooled buffers,
// and the metrics are atomic counters: an /action request costs the server a few allocations
// beyond what net/http and the ExternalEnv need. The Sampler yields once before each step,
// so that the requests already read by then share one batched inference; the ExternalEnv's
// MaxWait (`sample serve --max-wait`) trades latency for larger batches. /v1/act runs on a
// pool of sessions (PolicyActor, one per worker), so concurrent requests use several cores.
// BenchmarkServerEpisodes and BenchmarkServerAct in package benchmarks measure both paths
// over loopback TCP against a do-nothing net/http floor.
package server
