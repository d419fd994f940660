package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/onnxrl/sampler/externalenv/server"
)

// tokenEnv is the environment variable --token falls back to, so that the token need not
// appear in the process list.
const tokenEnv = "SAMPLE_SERVE_TOKEN"

// guardFlags are sample serve's defences against hostile clients and failures (issue 19).
type guardFlags struct {
	idleTimeout, readTimeout, writeTimeout, flushInterval time.Duration
	maxAgents, maxConns                                   int
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
	fs.IntVar(&g.maxConns, "max-connections", 4096, "most connections open at once; more are answered 503 and closed")
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

// limitListener accepts at most max connections at once; beyond that it answers each new
// connection 503 and closes it, so that a flood of idle sockets cannot starve the process of
// file descriptors, and clients learn at once to come back later.
type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refusing atomic.Int64
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, max: int64(max)}
}

var busyAnswer = func() []byte {
	body := `{"error":"too many connections","code":"unavailable"}`
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.refuse(c)
			continue
		}
		return &limitConn{Conn: c, l: l}, nil
	}
}

// maxRefusing bounds the refused connections being answered at once; beyond it they are
// closed without an answer.
const maxRefusing = 256

// refuse answers a connection beyond the limit with 503 and closes it. The answer follows
// the request's headers (read for at most a second): an HTTP client that gets an answer
// before it has sent its request reports a broken connection, not the 503.
func (l *limitListener) refuse(c net.Conn) {
	if l.refusing.Add(1) > maxRefusing {
		l.refusing.Add(-1)
		c.Close()
		return
	}
	go func() {
		defer l.refusing.Add(-1)
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 4096)
		var got []byte
		for !bytes.Contains(got, []byte("\r\n\r\n")) && len(got) < len(buf) {
			n, err := c.Read(buf[len(got):])
			got = buf[:len(got)+n]
			if err != nil {
				break
			}
		}
		c.Write(busyAnswer)
	}()
}

// Open returns the number of connections open.
func (l *limitListener) Open() int64 { return l.open.Load() }

type limitConn struct {
	net.Conn
	l      *limitListener
	closed atomic.Bool
}

func (c *limitConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
	}
	return c.Conn.Close()
}

// outputSet returns the files of an earlier run that a run writing to path would mix with:
// path itself and its rotated files (output.RotatedName: x-000001.jsonl, ...). Only regular
// files count: --out /dev/stdout or a named pipe is not an earlier run's data.
func outputSet(path string) ([]string, error) {
	var set []string
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, nil
		}
		set = append(set, path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ext := filepath.Ext(path)
	stem := path[:len(path)-len(ext)]
	matches, err := filepath.Glob(globEscape(stem) + "-[0-9][0-9][0-9][0-9][0-9][0-9]*" + globEscape(ext))
	if err != nil {
		return nil, err
	}
	for _, m := range matches {
		digits := strings.TrimSuffix(strings.TrimPrefix(m, stem+"-"), ext)
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() &&
			len(digits) >= 6 && strings.Trim(digits, "0123456789") == "" {
			set = append(set, m)
		}
	}
	return set, nil
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// prepareOutput refuses to write over an earlier output set unless overwrite is set, in
// which case it removes the whole set: a reader of x*.jsonl must not mix two runs.
func prepareOutput(path string, overwrite bool) error {
	set, err := outputSet(path)
	if err != nil {
		return err
	}
	if len(set) == 0 {
		return nil
	}
	if !overwrite {
		more := ""
		if len(set) > 1 {
			more = fmt.Sprintf(" and %d rotated files", len(set)-1)
		}
		return fmt.Errorf("--out %s: %s%s exist from an earlier run; give --overwrite to replace them all, or another --out", path, set[0], more)
	}
	for _, f := range set {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// errSamplerFailed is sample serve's exit error after the sampler failed: the failure itself
// was printed when it happened.
var errSamplerFailed = errors.New("the sampler had stopped (see above)")

// sameError reports whether b is a (the writer's sticky error returned again) or wrapped in a.
func sameError(a, b error) bool {
	return errors.Is(a, b) || strings.Contains(a.Error(), b.Error())
}
