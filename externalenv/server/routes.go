package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// route is one endpoint's handler in the router: it answers the request, returns the status
// code, and the route counts it in the metrics under its endpoint.
type route struct {
	s     *Server
	ep    endpoint
	serve func(w http.ResponseWriter, r *http.Request) int
}

func (rt *route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	code := rt.serve(w, r)
	rt.s.metrics.request(rt.ep, code, time.Since(start))
}

// routes is the API's router: an http.ServeMux with a method-and-path pattern per endpoint.
// Every path of the API is registered a second time without a method, to answer another
// method 405 with Allow, and "/" answers every other path 404: both as the API's JSON
// errors, so that the mux's own plain-text answers never go out.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(pattern string, ep endpoint, serve func(w http.ResponseWriter, r *http.Request) int) {
		mux.Handle(pattern, &route{s, ep, serve})
	}
	post := func(path string, ep endpoint) {
		handle("POST "+path, ep, func(w http.ResponseWriter, r *http.Request) int {
			return s.handle(w, r, ep, r.PathValue("id"))
		})
		handle(path, ep, func(w http.ResponseWriter, _ *http.Request) int { return methodNotAllowed(w, "POST") })
	}
	get := func(path string, ep endpoint, serve func(w http.ResponseWriter) int) {
		// A GET pattern matches HEAD too.
		handle("GET "+path, ep, func(w http.ResponseWriter, _ *http.Request) int { return serve(w) })
		handle(path, ep, func(w http.ResponseWriter, _ *http.Request) int { return methodNotAllowed(w, "GET, HEAD") })
	}
	post("/v1/episodes", epStart)
	post("/v1/episodes/{id}/action", epAction)
	post("/v1/episodes/{id}/log_action", epLogAction)
	post("/v1/episodes/{id}/returns", epReturns)
	post("/v1/episodes/{id}/end", epEnd)
	post("/v1/act", epAct)
	get("/v1/spaces", epSpaces, func(w http.ResponseWriter) int { return writeJSON(w, http.StatusOK, s.spaces) })
	get("/healthz", epHealth, s.health)
	get("/metrics", epMetrics, func(w http.ResponseWriter) int {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		s.metrics.WriteTo(w)
		return http.StatusOK
	})
	handle("/", epOther, notFound)
	return mux
}

// ServeHTTP answers one API request: the access checks (but for /healthz, open to probes),
// then the router.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.URL.Path != "/healthz" {
		if err := s.admit(r); err != nil {
			s.metrics.request(epOther, s.fail(w, err), time.Since(start))
			return
		}
	}
	if !canonicalPath(r.URL.EscapedPath()) {
		// The mux would redirect it to its clean form; no endpoint has such a path.
		s.metrics.request(epOther, notFound(w, r), time.Since(start))
		return
	}
	s.mux.ServeHTTP(w, r)
}

func notFound(w http.ResponseWriter, r *http.Request) int {
	return writeError(w, http.StatusNotFound, wire.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
}

// canonicalPath reports whether p is a path http.ServeMux routes as it is, without
// redirecting to a cleaned form: rooted, without empty, "." or ".." segments.
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return !strings.Contains(p, "//")
}

// isPathSegment reports whether an episode id can be the {id} segment of the episode
// endpoints' paths, escaped as url.PathEscape does ('/' as %2F): "." and ".." cannot (a
// client's URL library or the router resolves them), nor "/" alone (http.ServeMux takes a
// segment that is "/" once unescaped for the end of the path).
func isPathSegment(id string) bool { return id != "." && id != ".." && id != "/" }
