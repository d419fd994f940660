package main

import (
	"bytes"
	"container/list"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener bounds the connections open at once, in all (max) and from one address
// (perIP), so that a flood of idle sockets can neither starve the process of file
// descriptors nor lock other clients out (issue 35: 4,500 idle connections from one local
// client made /healthz and every new client fail for up to 30 s). At a limit it makes room
// by closing a waiting connection of the same scope: the oldest idle keep-alive connection
// first, else the oldest that has sent no complete request for at least evictAge (its
// --header-timeout would close it anyway); a connection with a request in progress is never
// closed. When there is none, the new connection is answered 503 and closed, so that clients
// learn at once to come back later. serve.go sets the http.Server's ConnState to connState,
// which tells waiting connections from busy ones.
type limitListener struct {
	net.Listener
	max, perIP int
	evictAge   time.Duration

	mu      sync.Mutex
	all     scope
	byIP    map[string]*scope
	evicted atomic.Int64

	refusing atomic.Int64
}

// scope is the connections of the listener, or of one address: how many are open and those
// waiting for a request, oldest first.
type scope struct {
	open int
	idle list.List // keep-alive connections between requests (http.StateIdle)
	new  list.List // connections that have not sent a complete request yet (http.StateNew)
}

// evictAge: a connection without a request is not closed for a newer one before this age,
// so that a burst of new clients at the limit does not close each other.
const evictAge = 500 * time.Millisecond

func newLimitListener(ln net.Listener, max, perIP int) *limitListener {
	return &limitListener{Listener: ln, max: max, perIP: perIP, evictAge: evictAge, byIP: map[string]*scope{}}
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
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
		l.refuse(c)
	}
}

// admit registers c, closing a waiting connection of its address or of all when a limit is
// reached; it returns nil when there is no room.
func (l *limitListener) admit(c net.Conn) *limitConn {
	ip := remoteIP(c)
	now := time.Now()
	var victims [2]*limitConn
	l.mu.Lock()
	s := l.byIP[ip]
	if s == nil {
		s = &scope{}
		l.byIP[ip] = s
	}
	if s.open >= l.perIP {
		if victims[0] = s.victim(now, l.evictAge); victims[0] == nil {
			l.drop(ip, s)
			l.mu.Unlock()
			return nil
		}
		l.detach(victims[0])
	}
	if l.all.open >= l.max {
		if victims[1] = l.all.victim(now, l.evictAge); victims[1] == nil {
			l.drop(ip, s)
			l.mu.Unlock()
			return nil
		}
		l.detach(victims[1])
	}
	lc := &limitConn{Conn: c, l: l, ip: ip, scope: s}
	l.all.open++
	s.open++
	l.wait(lc, false, now)
	l.mu.Unlock()
	for _, v := range victims {
		if v != nil {
			l.evicted.Add(1)
			v.Conn.Close()
		}
	}
	return lc
}

// victim returns the connection to close for a new one: the oldest idle keep-alive
// connection, else the oldest without a complete request that is at least age old.
func (s *scope) victim(now time.Time, age time.Duration) *limitConn {
	if e := s.idle.Front(); e != nil {
		return e.Value.(*limitConn)
	}
	if e := s.new.Front(); e != nil {
		if c := e.Value.(*limitConn); now.Sub(c.since) >= age {
			return c
		}
	}
	return nil
}

// wait puts c at the end of the waiting lists (idle: between keep-alive requests, else not
// a complete request yet); l.mu is held.
func (l *limitListener) wait(c *limitConn, idle bool, now time.Time) {
	l.unwait(c)
	c.idle, c.since = idle, now
	if idle {
		c.inAll, c.inIP = l.all.idle.PushBack(c), c.scope.idle.PushBack(c)
	} else {
		c.inAll, c.inIP = l.all.new.PushBack(c), c.scope.new.PushBack(c)
	}
}

// unwait takes c off the waiting lists; l.mu is held.
func (l *limitListener) unwait(c *limitConn) {
	if c.inAll == nil {
		return
	}
	if c.idle {
		l.all.idle.Remove(c.inAll)
		c.scope.idle.Remove(c.inIP)
	} else {
		l.all.new.Remove(c.inAll)
		c.scope.new.Remove(c.inIP)
	}
	c.inAll, c.inIP = nil, nil
}

// detach stops counting c (closed, or chosen to be closed); l.mu is held.
func (l *limitListener) detach(c *limitConn) {
	if c.detached {
		return
	}
	c.detached = true
	l.unwait(c)
	l.all.open--
	c.scope.open--
	l.drop(c.ip, c.scope)
}

// drop forgets the address's scope once it has no connection; l.mu is held.
func (l *limitListener) drop(ip string, s *scope) {
	if s.open == 0 {
		delete(l.byIP, ip)
	}
}

// connState is the http.Server's ConnState: a connection waits between requests (idle) and
// is busy while one is read or answered.
func (l *limitListener) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.detached {
		return
	}
	switch st {
	case http.StateActive:
		l.unwait(lc)
	case http.StateIdle:
		l.wait(lc, true, time.Now())
	case http.StateHijacked, http.StateClosed:
		l.detach(lc)
	}
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
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
func (l *limitListener) Open() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(l.all.open)
}

// Evicted returns the number of waiting connections closed to make room for new ones.
func (l *limitListener) Evicted() int64 { return l.evicted.Load() }

// limitConn is a connection the listener counts; the fields but Conn are guarded by l.mu.
type limitConn struct {
	net.Conn
	l           *limitListener
	ip          string
	scope       *scope
	idle        bool          // on the idle lists (else the new ones), when waiting
	since       time.Time     // when it began waiting
	inAll, inIP *list.Element // its places on the waiting lists; nil while busy
	detached    bool          // no longer counted
}

func (c *limitConn) Close() error {
	c.l.mu.Lock()
	c.l.detach(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
