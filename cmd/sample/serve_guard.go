package main

import (
	"errors"
	"flag"
	"os"
	"strings"
	"time"

	"github.com/onnxrl/sampler/externalenv/server"
)

// tokenEnv is the environment variable --token falls back to, so that the token need not
// appear in the process list.
const tokenEnv = "SAMPLE_SERVE_TOKEN"

// guardFlags are sample serve's defences against hostile clients and failures (issue 19).
type guardFlags struct {
	idleTimeout, readTimeout, writeTimeout, flushInterval time.Duration
	headerTimeout                                         time.Duration
	maxAgents, maxConns, maxConnsPerIP                    int
	token, maxInFlight                                    string
	allowOrigins                                          stringList
	insecure, overwrite                                   bool
}

// stringList is a repeatable flag whose values may also be comma-separated.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func (g *guardFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&g.idleTimeout, "episode-idle-timeout", server.DefaultIdleTimeout, "end an episode (truncated, recorded) after this long without a request (negative: never)")
	fs.IntVar(&g.maxAgents, "max-agents", server.DefaultMaxAgents, "most agents of one multi-agent episode")
	fs.IntVar(&g.maxConns, "max-connections", 4096, "most connections open at once; at the limit the oldest idle keep-alive connection (else one that has sent no request for 0.5 s) is closed for a new one, and without one the new one is answered 503 and closed")
	fs.IntVar(&g.maxConnsPerIP, "max-connections-per-ip", 256, "most connections open at once from one address (as --max-connections, among that address's connections)")
	fs.DurationVar(&g.headerTimeout, "header-timeout", 5*time.Second, "close a connection that has not sent a complete request's headers this long after it opened (a keep-alive connection: after its next request began)")
	fs.StringVar(&g.maxInFlight, "max-bodies-in-flight", "64MiB", "most request body bytes read or held at once (503 beyond)")
	fs.DurationVar(&g.readTimeout, "read-timeout", 30*time.Second, "longest time to read a request, headers and body")
	fs.DurationVar(&g.writeTimeout, "write-timeout", 30*time.Second, "longest time to write a response (added to --timeout)")
	fs.StringVar(&g.token, "token", "", "require 'Authorization: Bearer TOKEN' on every request but /healthz (default: $"+tokenEnv+")")
	fs.Var(&g.allowOrigins, "allow-origin", "let browser requests from this origin through (repeatable, or comma-separated; '*': any)")
	fs.BoolVar(&g.insecure, "insecure", false, "allow listening beyond loopback without --token")
	fs.BoolVar(&g.overwrite, "overwrite", false, "replace an existing --out file and its rotated files (otherwise refused)")
	fs.DurationVar(&g.flushInterval, "flush-interval", 5*time.Second, "write the served steps at least this often (0: at each complete fragment only)")
}

// check validates the flags against the listen address.
func (g *guardFlags) check(addr string) error {
	if g.token == "" {
		g.token = os.Getenv(tokenEnv)
	}
	switch {
	case g.maxAgents < 1:
		return usagef("--max-agents %d: want >= 1", g.maxAgents)
	case g.maxConns < 1:
		return usagef("--max-connections %d: want >= 1", g.maxConns)
	case g.maxConnsPerIP < 1:
		return usagef("--max-connections-per-ip %d: want >= 1", g.maxConnsPerIP)
	case g.headerTimeout <= 0:
		return usagef("--header-timeout %v: want > 0", g.headerTimeout)
	case g.readTimeout <= 0:
		return usagef("--read-timeout %v: want > 0", g.readTimeout)
	case g.writeTimeout <= 0:
		return usagef("--write-timeout %v: want > 0", g.writeTimeout)
	case g.flushInterval < 0:
		return usagef("--flush-interval %v: want >= 0", g.flushInterval)
	case g.idleTimeout == 0:
		return usagef("--episode-idle-timeout 0: want a duration (negative: never)")
	}
	if n, err := parseSize(g.maxInFlight); err != nil || n < 1 {
		return usagef("--max-bodies-in-flight %q: want a positive size", g.maxInFlight)
	}
	if !server.IsLoopback(addr) && g.token == "" && !g.insecure {
		return usagef("--addr %s listens beyond loopback: give --token (or $%s), or --insecure to serve anyone who can connect", addr, tokenEnv)
	}
	return nil
}

// apply sets the server options of the flags.
func (g *guardFlags) apply(so *server.Options, addr string) {
	n, _ := parseSize(g.maxInFlight)
	so.IdleTimeout, so.MaxAgents, so.MaxBodiesInFlight = g.idleTimeout, g.maxAgents, n
	so.Access = server.Access{Token: g.token, AllowOrigins: g.allowOrigins, LoopbackHost: server.IsLoopback(addr)}
}

// writeTimeout is the http.Server's WriteTimeout: an /action may wait --timeout for its
// action before the answer is written.
func (g *guardFlags) httpWriteTimeout(actionTimeout time.Duration) time.Duration {
	if actionTimeout < 0 {
		return 0 // no action timeout: no bound on the response either
	}
	return actionTimeout + g.writeTimeout
}

// errSamplerFailed is sample serve's exit error after the sampler failed: the failure itself
// was printed when it happened.
var errSamplerFailed = errors.New("the sampler had stopped (see above)")

// sameError reports whether b is a (the writer's sticky error returned again) or wrapped in a.
func sameError(a, b error) bool {
	return errors.Is(a, b) || strings.Contains(a.Error(), b.Error())
}
