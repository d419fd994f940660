package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server/wire"
	"github.com/onnxrl/sampler/spaces"
)

// DefaultMaxBodyBytes is the request body limit when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 4 << 20

// MaxEpisodeIDBytes is the longest episode id a client may choose.
const MaxEpisodeIDBytes = 1024

// ErrClosed is the error of requests that arrive after Close (503).
var ErrClosed = errors.New("server: shutting down")

// Options configures a Server.
type Options struct {
	// Env is the single-agent ExternalEnv the episode endpoints drive, or MultiAgentEnv the
	// multi-agent one (exactly one of them). New starts its run loop (it must not have been
	// started); Close ends it.
	Env           *externalenv.ExternalEnv
	MultiAgentEnv *externalenv.ExternalMultiAgentEnv
	// Actor answers /v1/act; nil makes /v1/act answer 501.
	Actor Actor
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Metrics receives the request metrics; nil means new ones (see Server.Metrics).
	Metrics *Metrics
	// Logger receives unexpected errors (500s); nil means slog.Default().
	Logger *slog.Logger
	// IdleTimeout ends an episode (truncated, recorded, its slot freed) once it has had no
	// request for this long; 0 means DefaultIdleTimeout, negative means never.
	IdleTimeout time.Duration
	// MaxAgents bounds the agents of one multi-agent request (400 beyond); 0 means
	// DefaultMaxAgents. The bound on a whole episode is the env's
	// (externalenv.MultiAgentOptions.MaxAgents, also a 400).
	MaxAgents int
	// MaxBodiesInFlight bounds the request body bytes read or held at once (503 beyond, to
	// retry); 0 means DefaultMaxBodiesInFlight.
	MaxBodiesInFlight int64
	// Access says who may call the API (token, origins, host names); the zero value lets
	// anyone through who can reach the listener.
	Access Access
}

// Server is the policy server's http.Handler: the episode endpoints over an ExternalEnv,
// stateless batched inference over an Actor, and the spaces, health and metrics endpoints
// (see the package documentation for the API). ServeHTTP is safe for concurrent use.
type Server struct {
	eps      episodeEnv // the env, single- or multi-agent
	api      episodeAPI // its episode endpoints, chosen in New
	multi    bool
	obsSpace spaces.Space
	actSpace spaces.Space
	obsSize  int
	actSize  int
	actor    Actor
	maxBody  int64
	metrics  *Metrics
	log      *slog.Logger
	spaces   []byte // the /v1/spaces body

	closed atomic.Bool

	runDone   chan struct{} // closed by Close: the env's run loop returns
	closeOnce sync.Once
	closeErr  error

	bufs sync.Pool // *reqBuf

	idle       time.Duration // 0: episodes never expire
	reaperDone chan struct{} // closed when the reaper has returned
	maxAgents  int
	failure    atomic.Pointer[error] // set by Fail
	budget     bodyBudget
	access     Access
	mux        *http.ServeMux // the router (routes.go)
}

// episodeEnv is what the single- and multi-agent ExternalEnv share (their common base): the
// server keeps no state of its own about episodes and asks the env.
type episodeEnv interface {
	ObservationSpace() spaces.Space
	ActionSpace() spaces.Space
	StartEpisode(id string, trainingEnabled bool) (string, error)
	TruncateEpisode(id string) error
	TruncateAll() (int, error)
	TruncateIdle(idle time.Duration, now time.Time) int
	Running() int
}

// episodeAPI is the episode endpoints that differ between the single- and the multi-agent
// form (singleAgent, multiAgent): New picks one, and the handlers never ask which.
type episodeAPI interface {
	action(b *reqBuf, id string, r *http.Request, w http.ResponseWriter) (int, error)
	logAction(b *reqBuf, id string, w http.ResponseWriter) (int, error)
	returns(b *reqBuf, id string, w http.ResponseWriter) (int, error)
	end(b *reqBuf, id string, w http.ResponseWriter) (int, error)
}

// reqBuf holds one request's buffers; they are pooled.
type reqBuf struct {
	body []byte
	out  []byte
	obs  []float32
	act  []float32
	dec  wire.Decoder
	// Multi-agent: the agents of a map in document order, and the maps handed to the env.
	refs   []agentRef
	obsMap map[string][]float32
	actMap map[string][]float32
	ids    []string
}

// New returns a server over opts.Env and starts the env's run loop, which returns when Close
// is called. An envrunner.Runner (see Sampler) must drive the env as its BaseEnv for the
// action endpoints to be answered.
func New(opts Options) (*Server, error) {
	if (opts.Env == nil) == (opts.MultiAgentEnv == nil) {
		return nil, errors.New("server: set one of Options.Env and Options.MultiAgentEnv")
	}
	if opts.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("server: MaxBodyBytes %d, want >= 0", opts.MaxBodyBytes)
	}
	if opts.MaxBodiesInFlight < 0 {
		return nil, fmt.Errorf("server: MaxBodiesInFlight %d, want >= 0", opts.MaxBodiesInFlight)
	}
	if opts.MaxAgents < 0 {
		return nil, fmt.Errorf("server: MaxAgents %d, want >= 0", opts.MaxAgents)
	}
	s := &Server{
		actor: opts.Actor, maxBody: opts.MaxBodyBytes, metrics: opts.Metrics, log: opts.Logger,
		runDone: make(chan struct{}), idle: opts.IdleTimeout, maxAgents: opts.MaxAgents, reaperDone: make(chan struct{}),
	}
	switch {
	case s.idle == 0:
		s.idle = DefaultIdleTimeout
	case s.idle < 0:
		s.idle = 0
	}
	if s.maxAgents == 0 {
		s.maxAgents = DefaultMaxAgents
	}
	s.budget.limit = opts.MaxBodiesInFlight
	if s.budget.limit == 0 {
		s.budget.limit = DefaultMaxBodiesInFlight
	}
	s.access = opts.Access.normalized()
	if opts.Env != nil {
		s.eps, s.api = opts.Env, singleAgent{s, opts.Env}
	} else {
		s.eps, s.api, s.multi = opts.MultiAgentEnv, multiAgent{s, opts.MultiAgentEnv}, true
	}
	s.obsSpace, s.actSpace = s.eps.ObservationSpace(), s.eps.ActionSpace()
	s.obsSize, s.actSize = s.obsSpace.Size(), s.actSpace.Size()
	if s.maxBody == 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	sp, err := json.Marshal(struct {
		Obs        spaces.Space `json:"observation_space"`
		Act        spaces.Space `json:"action_space"`
		MultiAgent bool         `json:"multi_agent"`
		HasAct     bool         `json:"act"`
	}{s.obsSpace, s.actSpace, s.multi, s.actor != nil})
	if err != nil {
		return nil, fmt.Errorf("server: spaces: %w", err)
	}
	s.spaces = sp
	s.bufs.New = func() any { return &reqBuf{} }
	s.mux = s.routes()
	// The run loop: the simulator is the HTTP clients; it ends with Close.
	run := func(ctx context.Context) error {
		select {
		case <-s.runDone:
		case <-ctx.Done():
		}
		return nil
	}
	if opts.Env != nil {
		opts.Env.Start(context.Background(), func(ctx context.Context, _ *externalenv.ExternalEnv) error { return run(ctx) })
	} else {
		opts.MultiAgentEnv.Start(context.Background(), func(ctx context.Context, _ *externalenv.ExternalMultiAgentEnv) error { return run(ctx) })
	}
	if s.idle > 0 {
		go s.reap()
	} else {
		close(s.reaperDone)
	}
	return s, nil
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Close ends every running episode that has reported an observation, truncated with its last
// observation as the final one (so that every action served becomes a transition of the
// sample batches), and ends the env's run loop: the sampler polls what is left and then stops
// with a *externalenv.RunLoopError whose Err is nil (Sampler treats it as a normal end).
// Requests after Close fail with 503. Call it after the http.Server has shut down (no
// request in flight). It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		// ErrStopped: the sampler failed and the env was stopped: nothing can be recorded.
		n, err := s.eps.TruncateAll()
		s.metrics.truncated.Add(int64(n))
		s.metrics.active.Store(int64(s.eps.Running()))
		if err != nil && !errors.Is(err, externalenv.ErrStopped) {
			s.closeErr = fmt.Errorf("server: ending the open episodes: %w", err)
		}
		close(s.runDone)
		<-s.reaperDone
	})
	return s.closeErr
}

// handle reads the body into a pooled buffer and runs the endpoint's handler, which either
// writes its response and returns the status code, or returns an error that handle writes.
//
// A panic in a handler is answered 500 (see recoverRequest); its buffers are dropped.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, ep endpoint, id string) (code int) {
	b := s.bufs.Get().(*reqBuf)
	defer func() {
		if v := recover(); v != nil {
			code = s.recoverRequest(w, v, ep, id)
			return
		}
		s.putBuf(b)
	}()
	if err := checkJSON(r); err != nil {
		return s.fail(w, err)
	}
	reserved, err := s.reserve(r)
	if err != nil {
		return s.fail(w, err)
	}
	defer s.budget.release(reserved)
	if b.body, err = s.readBody(r, b.body[:0]); err != nil {
		return s.fail(w, err)
	}
	if s.isClosed() {
		return s.fail(w, ErrClosed)
	}
	if f := s.failure.Load(); f != nil && ep != epAct {
		return s.fail(w, &errFailed{*f})
	}
	b.dec.Reset(b.body)
	switch ep {
	case epStart:
		code, err = s.startEpisode(b, w)
	case epAction:
		code, err = s.api.action(b, id, r, w)
	case epLogAction:
		code, err = s.api.logAction(b, id, w)
	case epReturns:
		code, err = s.api.returns(b, id, w)
	case epEnd:
		code, err = s.api.end(b, id, w)
	case epAct:
		code, err = s.act(b, r, w)
	}
	if err != nil {
		return s.fail(w, err)
	}
	return code
}

// maxPooled is the largest buffer kept in the pool; larger ones (huge /v1/act requests) are
// left to the garbage collector.
const maxPooled = 1 << 20

func (s *Server) putBuf(b *reqBuf) {
	if cap(b.body) > maxPooled || cap(b.out) > maxPooled || 4*cap(b.obs) > maxPooled || 4*cap(b.act) > maxPooled {
		return
	}
	b.dec.Reset(nil)
	s.bufs.Put(b)
}

func (s *Server) isClosed() bool { return s.closed.Load() }

// errTooLarge is a body over the limit.
type errTooLarge struct{ limit int64 }

func (e *errTooLarge) Error() string {
	return fmt.Sprintf("server: request body larger than %d bytes", e.limit)
}

// readBody reads the request body into buf, up to the limit.
func (s *Server) readBody(r *http.Request, buf []byte) ([]byte, error) {
	if r.ContentLength > s.maxBody {
		return buf, &errTooLarge{s.maxBody}
	}
	if r.ContentLength > 0 && int64(cap(buf)) < r.ContentLength+1 {
		buf = make([]byte, 0, r.ContentLength+1) // +1: the read that sees EOF
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > s.maxBody {
			return buf, &errTooLarge{s.maxBody}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, fmt.Errorf("%w: reading the body: %w", errBadRequest, err)
		}
	}
}

var errBadRequest = errors.New("server: bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

var (
	jsonContentType = []string{"application/json"}
	retryAfter      = []string{"1"}
)

// writeJSON writes a JSON response and returns its status code.
func writeJSON(w http.ResponseWriter, code int, body []byte) int {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	if len(body) > 2048 { // net/http would chunk it
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(code)
	w.Write(body)
	return code
}

func writeError(w http.ResponseWriter, code int, errCode, msg string) int {
	body := make([]byte, 0, 64+len(msg))
	body = append(body, `{"error":`...)
	body = wire.AppendString(body, msg)
	body = append(body, `,"code":`...)
	body = wire.AppendString(body, errCode)
	body = append(body, '}')
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		w.Header()["Retry-After"] = retryAfter
	}
	return writeJSON(w, code, body)
}

func methodNotAllowed(w http.ResponseWriter, allow string) int {
	w.Header().Set("Allow", allow)
	return writeError(w, http.StatusMethodNotAllowed, wire.CodeMethod, "method not allowed; use "+allow)
}

// fail writes err as an error response with the status code it maps to.
func (s *Server) fail(w http.ResponseWriter, err error) int {
	code, errCode := status(err)
	if code == http.StatusServiceUnavailable && errors.Is(err, externalenv.ErrStopped) {
		if f := s.Failure(); f != nil {
			// The request waited on the sampler, which failed.
			code, errCode, err = http.StatusInternalServerError, wire.CodeInternal, &errFailed{f}
		}
	}
	var failed *errFailed
	switch {
	case code == http.StatusInternalServerError && !errors.As(err, &failed): // the failure is reported once, by Fail's caller
		s.log.Error("server: internal error", "err", err)
	case code == http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="sample serve"`)
	}
	return writeError(w, code, errCode, publicMessage(err))
}

// status maps an error to its HTTP status and error code.
func status(err error) (int, string) {
	var se *wire.SyntaxError
	var tl *errTooLarge
	switch {
	case errors.As(err, &se):
		return http.StatusBadRequest, wire.CodeBadRequest
	case errors.Is(err, errBadRequest), errors.Is(err, externalenv.ErrTooManyAgents), errors.Is(err, externalenv.ErrBadReward):
		return http.StatusBadRequest, wire.CodeBadRequest
	case errors.As(err, &tl):
		return http.StatusRequestEntityTooLarge, wire.CodeTooLarge
	case errors.Is(err, errContentType):
		return http.StatusUnsupportedMediaType, wire.CodeMediaType
	case errors.Is(err, errUnauthorized):
		return http.StatusUnauthorized, wire.CodeUnauthorized
	case errors.Is(err, errForeignHost), errors.Is(err, errOrigin):
		return http.StatusForbidden, wire.CodeForbidden
	case errors.Is(err, errBusy):
		return http.StatusServiceUnavailable, wire.CodeUnavailable
	case errors.As(err, new(*errFailed)):
		return http.StatusServiceUnavailable, wire.CodeUnavailable
	case errors.Is(err, externalenv.ErrBadObservation):
		return http.StatusBadRequest, wire.CodeBadObservation
	case errors.Is(err, externalenv.ErrBadAction):
		return http.StatusBadRequest, wire.CodeBadAction
	case errors.Is(err, externalenv.ErrEpisodeNotFound):
		return http.StatusNotFound, wire.CodeEpisodeNotFound
	case errors.Is(err, externalenv.ErrEpisodeExists):
		return http.StatusConflict, wire.CodeEpisodeExists
	case errors.Is(err, externalenv.ErrEpisodeDone):
		return http.StatusConflict, wire.CodeEpisodeDone
	case errors.Is(err, externalenv.ErrEpisodeBusy):
		return http.StatusConflict, wire.CodeEpisodeBusy
	case errors.Is(err, externalenv.ErrTooManyEpisodes):
		return http.StatusTooManyRequests, wire.CodeTooManyEpisodes
	case errors.Is(err, externalenv.ErrTimeout):
		return http.StatusGatewayTimeout, wire.CodeTimeout
	case errors.Is(err, externalenv.ErrStopped), errors.Is(err, ErrClosed):
		return http.StatusServiceUnavailable, wire.CodeUnavailable
	case errors.Is(err, errNoActor):
		return http.StatusNotImplemented, wire.CodeNotImplemented
	case errors.Is(err, context.Canceled):
		return 499, wire.CodeCanceled // nginx's "client closed request"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, wire.CodeTimeout
	}
	return http.StatusInternalServerError, wire.CodeInternal
}

var errNoActor = errors.New("server: /v1/act is not available: the server has no stateless policy")

func (s *Server) health(w http.ResponseWriter) int {
	closed, n := s.closed.Load(), s.eps.Running()
	if closed {
		return writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"shutting down"}`))
	}
	if f := s.Failure(); f != nil {
		body := wire.AppendString([]byte(`{"status":"failing","error":`), publicMessage(f))
		body = strconv.AppendInt(append(body, `,"active_episodes":`...), int64(n), 10)
		return writeJSON(w, http.StatusServiceUnavailable, append(body, '}'))
	}
	body := strconv.AppendInt([]byte(`{"status":"ok","active_episodes":`), int64(n), 10)
	return writeJSON(w, http.StatusOK, append(body, '}'))
}

// checkValue checks a decoded value against its space, wrapping base (ErrBadObservation or
// ErrBadAction) with what is wrong.
func checkValue(base error, what string, s spaces.Space, v []float32) error {
	if len(v) != s.Size() {
		return fmt.Errorf("%w: %s has %d values, want %d (%s)", base, what, len(v), s.Size(), spaces.String(s))
	}
	if s.Contains(v) {
		return nil
	}
	if b, ok := s.(*spaces.Box); ok {
		for i, x := range v {
			switch {
			case x != x:
				return fmt.Errorf("%w: %s: value %d is NaN", base, what, i)
			case x < b.Low[i] || x > b.High[i]:
				return fmt.Errorf("%w: %s: value %d = %v is outside [%v, %v]", base, what, i, x, b.Low[i], b.High[i])
			}
		}
	}
	if len(v) > 16 {
		return fmt.Errorf("%w: %s is not in %s", base, what, spaces.String(s))
	}
	return fmt.Errorf("%w: %s %v is not in %s", base, what, v, spaces.String(s))
}

// member reads an object, calling fn for the keys it knows (fn returns false for others,
// which are skipped), and checks that nothing follows. fn compares keys with
// switch string(key), which does not allocate.
func member(d *wire.Decoder, fn func(key []byte) (bool, error)) error {
	if err := d.Object(func(key []byte) error {
		ok, err := fn(key)
		if err != nil || ok {
			return err
		}
		return d.Skip()
	}); err != nil {
		return err
	}
	return d.End()
}

// startEpisode: POST /v1/episodes {"episode_id"?, "training_enabled"?} -> 201 {"episode_id"}.
func (s *Server) startEpisode(b *reqBuf, w http.ResponseWriter) (int, error) {
	d := &b.dec
	var id string
	training := true
	if !d.Empty() {
		err := member(d, func(key []byte) (bool, error) {
			switch string(key) {
			case "episode_id":
				if d.Null() {
					return true, nil
				}
				v, err := d.String()
				if err != nil {
					return true, err
				}
				if len(v) > MaxEpisodeIDBytes {
					return true, badRequest("episode_id has %d bytes, at most %d allowed", len(v), MaxEpisodeIDBytes)
				}
				id = string(v)
				if !isPathSegment(id) {
					return true, badRequest("episode_id %q cannot be a path segment of /v1/episodes/{id}/...", id)
				}
			case "training_enabled":
				v, err := d.Bool()
				training = v
				return true, err
			default:
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return 0, err
		}
	}
	id, err := s.eps.StartEpisode(id, training)
	if err != nil {
		return 0, err
	}
	s.metrics.active.Store(int64(s.eps.Running()))
	s.metrics.started.Add(1)
	b.out = append(b.out[:0], `{"episode_id":`...)
	b.out = wire.AppendString(b.out, id)
	b.out = append(b.out, '}')
	return writeJSON(w, http.StatusCreated, b.out), nil
}

// decodeObs reads {"observation": V} (with the other members the caller handles) into b.obs.
func (s *Server) decodeObs(b *reqBuf, other func(key []byte) (bool, error)) error {
	d := &b.dec
	b.obs = b.obs[:0]
	got := false
	err := member(d, func(key []byte) (bool, error) {
		if string(key) == "observation" {
			var err error
			b.obs, err = d.Value(b.obs[:0], s.obsSpace)
			got = true
			return true, err
		}
		if other != nil {
			return other(key)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if !got {
		return badRequest(`missing member "observation"`)
	}
	return checkValue(externalenv.ErrBadObservation, "observation", s.obsSpace, b.obs)
}

// truncatedMember reads the "truncated" member of /end.
func truncatedMember(d *wire.Decoder, key []byte, truncated *bool) (bool, error) {
	if string(key) != "truncated" {
		return false, nil
	}
	if d.Null() {
		return true, nil
	}
	v, err := d.Bool()
	*truncated = v
	return true, err
}

// ended counts an episode ended by its client.
func (s *Server) ended() {
	s.metrics.active.Store(int64(s.eps.Running()))
	s.metrics.ended.Add(1)
}

// act: POST /v1/act {"observations": [...], "explore"?} -> 200 {"actions": [...]}.
func (s *Server) act(b *reqBuf, r *http.Request, w http.ResponseWriter) (int, error) {
	if s.actor == nil {
		return 0, errNoActor
	}
	d := &b.dec
	b.obs = b.obs[:0]
	n := 0
	explore := ExploreDefault
	got := false
	err := member(d, func(key []byte) (bool, error) {
		switch string(key) {
		case "observations":
			got = true
			b.obs = b.obs[:0]
			n = 0
			return true, d.Array(func(i int) error {
				start := len(b.obs)
				var err error
				if b.obs, err = d.Value(b.obs, s.obsSpace); err != nil {
					return err
				}
				n++
				if v := b.obs[start:]; len(v) != s.obsSize || !s.obsSpace.Contains(v) {
					return checkValue(externalenv.ErrBadObservation, "observation "+strconv.Itoa(i), s.obsSpace, v)
				}
				return nil
			})
		case "explore":
			if d.Null() {
				return true, nil
			}
			v, err := d.Bool()
			explore = ExploreOff
			if v {
				explore = ExploreOn
			}
			return true, err
		}
		return false, nil
	})
	if err != nil {
		return 0, err
	}
	if !got {
		return 0, badRequest(`missing member "observations"`)
	}
	s.metrics.actBatch.observe(int64(n))
	b.act, err = s.actor.Act(r.Context(), b.act[:0], b.obs, n, explore)
	if err != nil {
		return 0, err
	}
	if len(b.act) != n*s.actSize {
		return 0, fmt.Errorf("server: the actor returned %d action values for %d observations, want %d each", len(b.act), n, s.actSize)
	}
	b.out = append(b.out[:0], `{"actions":[`...)
	for i := range n {
		if i > 0 {
			b.out = append(b.out, ',')
		}
		b.out = wire.AppendValue(b.out, s.actSpace, b.act[i*s.actSize:(i+1)*s.actSize])
	}
	b.out = append(b.out, "]}"...)
	return writeJSON(w, http.StatusOK, b.out), nil
}
