package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowSockets opens n connections to addr that each send a POST's headers and one byte of
// a 100-byte body, then stall.
func slowSockets(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	return slowSocketsFrom(t, "", addr, n)
}

// slowSocketsFrom is slowSockets from the loopback address local ("": the system's choice).
func slowSocketsFrom(t *testing.T, local, addr string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	req := "POST /v1/episodes HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
	for range n {
		c, err := d.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = c.Write([]byte(req))
		require.NoError(t, err)
		conns = append(conns, c)
	}
	return conns
}

// healthLatencies times k /healthz requests, each on a new connection (a probe's way).
func healthLatencies(t *testing.T, url string, k int) []time.Duration {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var ds []time.Duration
	for range k {
		start := time.Now()
		res, err := hc.Get(url + "/healthz")
		require.NoError(t, err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds
}

func p99(ds []time.Duration) time.Duration { return ds[(len(ds)*99+99)/100-1] }

// The reproduction: sockets that send headers and one body byte made /healthz time
// out. With 2,000 of them open /healthz answers within 100 ms at p99. They come from another
// address than the probes: one address holds at most --max-connections-per-ip (256) of them,
// and its requests in progress are never closed for newer connections (issue 35).
func TestServeSlowSockets(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace)
	addr := strings.TrimPrefix(p.url, "http://")
	slowSocketsFrom(t, "127.0.0.2", addr, n)
	ds := healthLatencies(t, p.url, 200)
	t.Logf("/healthz with %d slow sockets: p50 %v, p99 %v, max %v", n, ds[len(ds)/2], p99(ds), ds[len(ds)-1])
	assert.Less(t, p99(ds), 100*time.Millisecond)
}

// Beyond --max-connections a connection is answered 503 at once and closed (a flood cannot
// take every file descriptor), and --read-timeout ends the stalled requests.
func TestServeConnectionLimitAndReadTimeout(t *testing.T) {
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace,
		"--read-timeout", "1s", "--max-connections", "20")
	addr := strings.TrimPrefix(p.url, "http://")
	conns := slowSockets(t, addr, 20)
	time.Sleep(100 * time.Millisecond) // let the server accept them
	for _, c := range slowSockets(t, addr, 5) {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		assert.True(t, strings.HasPrefix(string(b), "HTTP/1.1 503"), "beyond the limit: %q", b)
	}
	// The read timeout ends the stalled requests: each socket is closed by the server.
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadAll(c)
		assert.NoError(t, err, "a stalled request outlived --read-timeout")
	}
	// The slots are free again.
	res, err := http.Get(p.url + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
}

// TestServeWriteTimeout: a client that sends requests and never reads the answers does not
// hold its connection (and the answers queued for it) past --write-timeout: the server gives
// up the write and closes the socket. Without the deadline the server would wait on the full
// socket for as long as the client lives.
func TestServeWriteTimeout(t *testing.T) {
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace,
		"--timeout", "100ms", "--write-timeout", "300ms")
	addr := strings.TrimPrefix(p.url, "http://")
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4096))
	// Pipelined requests, far more answers than the socket buffers hold.
	const n = 200_000
	go func() {
		req := []byte("GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")
		var buf []byte
		for range n {
			buf = append(buf, req...)
		}
		c.Write(buf) // fails once the server closes the connection
	}()
	time.Sleep(2 * time.Second) // never reading: the server's writes stall, then time out
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := io.ReadAll(c)
	if errors.Is(err, syscall.ECONNRESET) {
		// The server closed the socket with requests it never read still queued: the
		// kernel resets the connection instead of ending it. Closed either way.
		err = nil
	}
	require.NoError(t, err, "the connection outlived --write-timeout (read %d bytes)", len(b))
	answers := strings.Count(string(b), "HTTP/1.1 200")
	assert.Less(t, answers, n, "every answer was written: the writes never stalled")
	// The server still answers others.
	res, err := http.Get(p.url + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
}
