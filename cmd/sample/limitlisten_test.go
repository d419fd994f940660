package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveLimited serves 200 "ok" behind a limitListener, as sample serve does.
func serveLimited(t *testing.T, max, perIP int, headerTimeout time.Duration) (*limitListener, string) {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := newLimitListener(tcp, max, perIP)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: headerTimeout, IdleTimeout: time.Minute, ConnState: ln.connState}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln, tcp.Addr().String()
}

// dialFrom connects to addr from the loopback address local ("": the system's choice).
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends GET / on c (keep-alive) and returns the status line.
func get(t *testing.T, c net.Conn, addr string) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	require.NoError(t, err)
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	require.NoError(t, err)
	line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
	return line
}

// closedWithin reports whether the server closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadAll(c)
	return err == nil // EOF: closed by the server; a timeout is an error
}

// TestHeaderTimeout: a connection that sends nothing is closed after the header timeout
// (it held its slot for the 30 s read timeout before: issue 35).
func TestHeaderTimeout(t *testing.T) {
	_, addr := serveLimited(t, 10, 10, 300*time.Millisecond)
	c := dialFrom(t, "", addr)
	start := time.Now()
	assert.True(t, closedWithin(c, 5*time.Second))
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
}

// TestLimitClosesIdleFirst: at the limit, a new connection takes the place of the oldest idle
// keep-alive connection, not of a busy one, nor of a young one that has not sent its request.
func TestLimitClosesIdleFirst(t *testing.T) {
	ln, addr := serveLimited(t, 3, 3, 10*time.Second)
	idle := dialFrom(t, "", addr)
	require.Equal(t, "HTTP/1.1 200 OK", get(t, idle, addr))
	young := dialFrom(t, "", addr)
	busy := dialFrom(t, "", addr)
	_, err := io.WriteString(busy, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{") // a body that never ends
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ln.Open() == 3 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // the busy request's headers are read

	c := dialFrom(t, "", addr)
	assert.Equal(t, "HTTP/1.1 200 OK", get(t, c, addr), "the new connection is served")
	assert.True(t, closedWithin(idle, 5*time.Second), "the idle keep-alive connection made room")
	assert.Equal(t, int64(1), ln.Evicted())
	// Now the new one is idle, the young one is young, the busy one busy: the next new
	// connection takes the idle one's place again; the young and busy ones stay.
	d := dialFrom(t, "", addr)
	assert.Equal(t, "HTTP/1.1 200 OK", get(t, d, addr))
	assert.True(t, closedWithin(c, 5*time.Second))
	assert.False(t, closedWithin(young, 100*time.Millisecond), "a young connection was closed")
	assert.False(t, closedWithin(busy, 100*time.Millisecond), "a busy connection was closed")
	// d is idle; with d busy too, nothing can be closed: a new connection is answered 503.
	_, err = io.WriteString(d, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	e := dialFrom(t, "", addr)
	assert.Equal(t, "HTTP/1.1 503 Service Unavailable", get(t, e, addr))
}

// TestPerAddressLimit: one address cannot hold more than its share: beyond it, its own new
// connections are refused (or take its own idle ones' places) while another address is
// served.
func TestPerAddressLimit(t *testing.T) {
	_, addr := serveLimited(t, 100, 4, 10*time.Second)
	for range 4 {
		c := dialFrom(t, "127.0.0.2", addr)
		_, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
		require.NoError(t, err)
	}
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, "HTTP/1.1 503 Service Unavailable", get(t, dialFrom(t, "127.0.0.2", addr), addr))
	assert.Equal(t, "HTTP/1.1 200 OK", get(t, dialFrom(t, "127.0.0.1", addr), addr))
}

// idleFlood opens n connections from local that send nothing (as the flood did).
func idleFlood(t *testing.T, local, addr string, n int) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := d.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
	}
}

// TestServeIdleFlood: issue 35's repro. 4,500 idle TCP connections (the cap is 4,096) made
// /healthz and every new client fail for up to the 30 s read timeout. With the per-address
// cap, closing waiting connections for new ones and the header timeout, /healthz answers 200
// at once: from another address while one floods, and from the flooding address itself once
// its flood is older than the eviction age. The issue's goal is p99 within 100 ms; `make
// soak` (TestSoakIdleFlood) asserts that, this test a bound that survives a loaded machine.
func TestServeIdleFlood(t *testing.T) {
	n := 4500
	if testing.Short() {
		n = 600
	}
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace)
	addr := strings.TrimPrefix(p.url, "http://")
	for _, from := range []string{"127.0.0.2", "127.0.0.1"} {
		idleFlood(t, from, addr, n)
		time.Sleep(evictAge + 100*time.Millisecond)
		ds := healthLatencies(t, p.url, 200) // from 127.0.0.1, each on a new connection
		t.Logf("/healthz during a flood of %d idle connections from %s: p50 %v, p99 %v, max %v", n, from, ds[len(ds)/2], p99(ds), ds[len(ds)-1])
		assert.Less(t, p99(ds), time.Second)
	}
}

// TestSoakIdleFlood: TestServeIdleFlood with the bound, 100 ms at p99 (make soak).
func TestSoakIdleFlood(t *testing.T) {
	soakDuration(t)
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace)
	addr := strings.TrimPrefix(p.url, "http://")
	for _, from := range []string{"127.0.0.2", "127.0.0.1"} {
		idleFlood(t, from, addr, 4500)
		time.Sleep(evictAge + 100*time.Millisecond)
		ds := healthLatencies(t, p.url, 500)
		t.Logf("/healthz during a flood of 4500 idle connections from %s: p50 %v, p99 %v, max %v", from, ds[len(ds)/2], p99(ds), ds[len(ds)-1])
		assert.Less(t, p99(ds), 100*time.Millisecond)
	}
}
