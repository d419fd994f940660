package main

import (
	"bytes"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

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
