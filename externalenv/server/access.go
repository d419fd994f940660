package server

import (
	"crypto/subtle"
	"errors"
	"mime"
	"net"
	"net/http"
	"strings"
)

// Access says who may call the API. Browsers are the concern: a web page can make a
// visitor's browser POST to http://127.0.0.1:8900 (a "simple" cross-site request needs no
// preflight when its content type is text/plain), and a DNS rebinding attack can even read
// the answers. The server therefore takes only application/json bodies (415 otherwise, see
// checkJSON), and Access adds the rest. /healthz is always open (for probes).
type Access struct {
	// Token, when set, is required on every request but /healthz as the header
	// "Authorization: Bearer <Token>" (401 otherwise).
	Token string
	// AllowOrigins lists the origins ("https://app.example:8443", or "*" for any) whose
	// requests are let through; a request that carries an Origin header not listed is
	// refused (403). Requests without an Origin (simulators, curl) are not affected.
	AllowOrigins []string
	// LoopbackHost refuses requests whose Host header names anything but a loopback
	// address or "localhost" (403): set it when the server listens on loopback only, so
	// that a rebound DNS name cannot reach it.
	LoopbackHost bool
}

func (a Access) normalized() Access {
	out := a
	out.AllowOrigins = nil
	for _, o := range a.AllowOrigins {
		out.AllowOrigins = append(out.AllowOrigins, strings.TrimSuffix(strings.ToLower(o), "/"))
	}
	return out
}

// Errors of refused requests.
var (
	errUnauthorized = errors.New("server: missing or wrong bearer token (send Authorization: Bearer <token>)")
	errForeignHost  = errors.New("server: the Host header names a host other than this server's loopback address")
	errOrigin       = errors.New("server: requests from this Origin are not allowed (see sample serve --allow-origin)")
	errContentType  = errors.New("server: the body must be JSON, sent with Content-Type: application/json")
)

// admit checks the request against s.access; every endpoint but /healthz calls it.
func (s *Server) admit(r *http.Request) error {
	a := &s.access
	if a.LoopbackHost && !loopbackHost(r.Host) {
		return errForeignHost
	}
	if o := r.Header.Get("Origin"); o != "" && !allowedOrigin(a.AllowOrigins, o) {
		return errOrigin
	}
	if a.Token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(a.Token)) != 1 {
			return errUnauthorized
		}
	}
	return nil
}

// checkJSON requires a JSON content type on a request with a body (POST): a browser cannot
// send one cross-site without a CORS preflight, which this server does not answer.
func checkJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "application/json" { // the common case, without parsing
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return errContentType
	}
	return nil
}

func allowedOrigin(allow []string, origin string) bool {
	origin = strings.TrimSuffix(strings.ToLower(origin), "/")
	for _, a := range allow {
		if a == "*" || a == origin {
			return true
		}
	}
	return false
}

// loopbackHost reports whether a Host header (host or host:port) names a loopback address
// or localhost.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "."), "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopback reports whether a listen address (host:port) binds loopback only: a loopback
// IP or localhost. An empty host or 0.0.0.0 binds every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	return loopbackHost(host)
}
