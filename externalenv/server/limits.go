package server

import (
	"errors"
	"net/http"
	"sync/atomic"
)

// DefaultMaxAgents is the most agents one multi-agent episode may have when
// Options.MaxAgents is 0.
const DefaultMaxAgents = 1024

// MaxAgentIDBytes is the longest agent id a client may use, as MaxEpisodeIDBytes is for
// episode ids.
const MaxAgentIDBytes = 1024

// DefaultMaxBodiesInFlight is the bound on the request body bytes held at once when
// Options.MaxBodiesInFlight is 0: 64 MiB, sixteen bodies of the default size limit.
const DefaultMaxBodiesInFlight = 64 << 20

// errBusy is the error of a request whose body does not fit in the bytes left for bodies in
// flight (503, to retry).
var errBusy = errors.New("server: too many request bytes in flight; retry later")

// bodyBudget bounds the bytes of the request bodies being read or handled at once, so that
// many slow or large uploads cannot hold the memory of a body limit each: 200 clients that
// each send 4 MiB less one byte no longer pin 800 MB.
type bodyBudget struct {
	limit int64
	used  atomic.Int64
}

// reserve takes n bytes of the budget, or reports that they do not fit. One request always
// fits while nothing else is in flight.
func (b *bodyBudget) reserve(n int64) bool {
	for {
		used := b.used.Load()
		if used > 0 && used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (b *bodyBudget) release(n int64) { b.used.Add(-n) }

// reserve takes the request's body bytes from the server's budget: its Content-Length, or
// the body limit when the length is unknown (a chunked body), and returns them. The caller
// gives them back with s.budget.release(n) when the body's buffer is no longer held.
func (s *Server) reserve(r *http.Request) (n int64, err error) {
	n = r.ContentLength
	if n < 0 || n > s.maxBody {
		n = s.maxBody
	}
	if n == 0 {
		return 0, nil
	}
	if !s.budget.reserve(n) {
		s.metrics.busy.Add(1)
		return 0, errBusy
	}
	return n, nil
}

// BodiesInFlight returns the body bytes reserved by the requests being served.
func (s *Server) BodiesInFlight() int64 { return s.budget.used.Load() }
