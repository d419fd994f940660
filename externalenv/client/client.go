package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server/wire"
	"github.com/onnxrl/sampler/spaces"
)

// Errors of the client side; the server's errors map to externalenv's sentinel errors (see
// Error).
var (
	// ErrBadRequest: the server could not read the request (malformed JSON, a missing member,
	// a non-finite reward).
	ErrBadRequest = errors.New("client: bad request")
	// ErrTooLarge: the request body was over the server's limit.
	ErrTooLarge = errors.New("client: request body too large")
	// ErrNotImplemented: /v1/act on a server without a stateless policy.
	ErrNotImplemented = errors.New("client: not implemented by the server")
	// ErrBadResponse: the server's answer could not be read.
	ErrBadResponse = errors.New("client: bad response")
)

// Error is an error answer of the server: {"error": "...", "code": "..."} with its status.
// errors.Is matches it against externalenv's sentinel errors (ErrEpisodeNotFound,
// ErrEpisodeExists, ErrEpisodeDone, ErrEpisodeBusy, ErrTooManyEpisodes, ErrBadObservation,
// ErrBadAction, ErrTimeout, and ErrStopped for a server that is shutting down) and this
// package's.
type Error struct {
	StatusCode int
	Code       string // wire.Code*
	Message    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("client: server answered %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// Unwrap returns the sentinel error of the code (or, without a code, of the status).
func (e *Error) Unwrap() error {
	switch e.Code {
	case wire.CodeEpisodeNotFound:
		return externalenv.ErrEpisodeNotFound
	case wire.CodeEpisodeExists:
		return externalenv.ErrEpisodeExists
	case wire.CodeEpisodeDone:
		return externalenv.ErrEpisodeDone
	case wire.CodeEpisodeBusy:
		return externalenv.ErrEpisodeBusy
	case wire.CodeTooManyEpisodes:
		return externalenv.ErrTooManyEpisodes
	case wire.CodeBadObservation:
		return externalenv.ErrBadObservation
	case wire.CodeBadAction:
		return externalenv.ErrBadAction
	case wire.CodeTimeout:
		return externalenv.ErrTimeout
	case wire.CodeUnavailable:
		return externalenv.ErrStopped
	case wire.CodeBadRequest:
		return ErrBadRequest
	case wire.CodeTooLarge:
		return ErrTooLarge
	case wire.CodeNotImplemented:
		return ErrNotImplemented
	}
	switch e.StatusCode {
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusTooManyRequests:
		return externalenv.ErrTooManyEpisodes
	case http.StatusServiceUnavailable:
		return externalenv.ErrStopped
	case http.StatusGatewayTimeout:
		return externalenv.ErrTimeout
	}
	return nil
}

// Options configures a Client.
type Options struct {
	// HTTPClient sends the requests; nil means a client of its own with keep-alive
	// connections (MaxIdleConnsPerHost of them) and no overall timeout (use contexts).
	HTTPClient *http.Client
	// MaxIdleConnsPerHost is the number of idle keep-alive connections kept to the server
	// when HTTPClient is nil; 0 means 256. Use at least the number of goroutines that call
	// the client at once, or connections are closed and reopened.
	MaxIdleConnsPerHost int
	// Spaces are the server's spaces; nil means: fetched from /v1/spaces when first needed
	// (to read actions).
	Spaces *Spaces
	// Token is sent as "Authorization: Bearer <Token>" when set (a server started with
	// `sample serve --token`).
	Token string
}

// Spaces is the answer of /v1/spaces.
type Spaces struct {
	Observation spaces.Space
	Action      spaces.Space
	MultiAgent  bool
	// Act reports whether the server answers /v1/act.
	Act bool
}

// Client is the Go client of the policy server (package externalenv/server): one method per
// endpoint, safe for concurrent use. Observations and actions are flat []float32 in the raw
// layout of their space, as in package externalenv.
type Client struct {
	base string
	hc   *http.Client
	auth []string // the Authorization header, nil for none

	mu     sync.Mutex
	spaces *Spaces

	bufs sync.Pool // *buffers
}

type buffers struct {
	req  []byte
	resp []byte
	dec  wire.Decoder
	rd   bytes.Reader
}

// New returns a client of the server at baseURL ("http://127.0.0.1:8900").
func New(baseURL string, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: server URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: server URL %q: want http://host:port", baseURL)
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), hc: opts.HTTPClient, spaces: opts.Spaces}
	if c.hc == nil {
		n := opts.MaxIdleConnsPerHost
		if n <= 0 {
			n = 256
		}
		c.hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        n,
			MaxIdleConnsPerHost: n,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}}
	}
	if opts.Token != "" {
		c.auth = []string{"Bearer " + opts.Token}
	}
	c.bufs.New = func() any { return &buffers{} }
	return c, nil
}

// CloseIdleConnections closes the client's idle keep-alive connections.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// do sends a request with body b.req (nil for none) and reads the answer into b.resp. It
// returns the status code; an error answer (4xx, 5xx) is returned as an *Error.
func (c *Client) do(ctx context.Context, b *buffers, method, path string, body bool) (int, error) {
	var rd io.Reader
	if body {
		b.rd.Reset(b.req)
		rd = &b.rd
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("client: %w", err)
	}
	if body {
		req.Header["Content-Type"] = jsonContentType
	}
	if c.auth != nil {
		req.Header["Authorization"] = c.auth
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("client: %w", err)
	}
	defer res.Body.Close()
	b.resp, err = readAll(res.Body, b.resp[:0])
	if err != nil {
		return 0, fmt.Errorf("client: %s %s: reading the answer: %w", method, path, err)
	}
	if res.StatusCode >= 400 {
		e := &Error{StatusCode: res.StatusCode}
		var eb struct{ Error, Code string }
		if json.Unmarshal(b.resp, &eb) == nil && eb.Error != "" {
			e.Message, e.Code = eb.Error, eb.Code
		} else {
			e.Message = strings.TrimSpace(string(b.resp))
			if len(e.Message) > 200 {
				e.Message = e.Message[:200] + "..."
			}
		}
		return res.StatusCode, e
	}
	return res.StatusCode, nil
}

var jsonContentType = []string{"application/json"}

func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func (c *Client) get() *buffers { return c.bufs.Get().(*buffers) }

func (c *Client) put(b *buffers) {
	if cap(b.req) > 1<<20 || cap(b.resp) > 1<<20 {
		return
	}
	b.dec.Reset(nil)
	b.rd.Reset(nil)
	c.bufs.Put(b)
}

func episodePath(id, op string) string {
	return "/v1/episodes/" + url.PathEscape(id) + "/" + op
}

func badResponse(path string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrBadResponse, path, err)
}

// StartEpisode starts an episode and returns its id: id itself, or a new UUID when id is
// "". With trainingEnabled false the episode leaves no rows in the sample batches.
func (c *Client) StartEpisode(ctx context.Context, id string, trainingEnabled bool) (string, error) {
	b := c.get()
	defer c.put(b)
	b.req = append(b.req[:0], '{')
	if id != "" {
		b.req = append(b.req, `"episode_id":`...)
		b.req = wire.AppendString(b.req, id)
		b.req = append(b.req, ',')
	}
	if trainingEnabled {
		b.req = append(b.req, `"training_enabled":true}`...)
	} else {
		b.req = append(b.req, `"training_enabled":false}`...)
	}
	const path = "/v1/episodes"
	if _, err := c.do(ctx, b, http.MethodPost, path, true); err != nil {
		return "", err
	}
	var got string
	b.dec.Reset(b.resp)
	err := b.dec.Object(func(key []byte) error {
		if string(key) != "episode_id" {
			return b.dec.Skip()
		}
		s, err := b.dec.String()
		got = string(s)
		return err
	})
	if err != nil || got == "" {
		return "", badResponse(path, errors.Join(err, errors.New("no episode_id")))
	}
	return got, nil
}

// Spaces returns the server's spaces (fetched once, then cached).
func (c *Client) Spaces(ctx context.Context) (*Spaces, error) {
	c.mu.Lock()
	sp := c.spaces
	c.mu.Unlock()
	if sp != nil {
		return sp, nil
	}
	b := c.get()
	defer c.put(b)
	const path = "/v1/spaces"
	if _, err := c.do(ctx, b, http.MethodGet, path, false); err != nil {
		return nil, err
	}
	var raw struct {
		Obs        json.RawMessage `json:"observation_space"`
		Act        json.RawMessage `json:"action_space"`
		MultiAgent bool            `json:"multi_agent"`
		Act2       bool            `json:"act"`
	}
	if err := json.Unmarshal(b.resp, &raw); err != nil {
		return nil, badResponse(path, err)
	}
	obs, err := spaces.Unmarshal(raw.Obs)
	if err != nil {
		return nil, badResponse(path, err)
	}
	act, err := spaces.Unmarshal(raw.Act)
	if err != nil {
		return nil, badResponse(path, err)
	}
	sp = &Spaces{Observation: obs, Action: act, MultiAgent: raw.MultiAgent, Act: raw.Act2}
	c.mu.Lock()
	c.spaces = sp
	c.mu.Unlock()
	return sp, nil
}

// Health returns nil when the server answers /healthz with 200, the error otherwise (an
// *Error wrapping externalenv.ErrStopped while it shuts down).
func (c *Client) Health(ctx context.Context) error {
	b := c.get()
	defer c.put(b)
	_, err := c.do(ctx, b, http.MethodGet, "/healthz", false)
	var e *Error
	if errors.As(err, &e) && e.StatusCode == http.StatusServiceUnavailable && e.Code == "" {
		e.Code = wire.CodeUnavailable
	}
	return err
}

// A payload is the observation or action of an episode request: flat values (the
// single-agent form) or an object of agent id -> values (the multi-agent one). The request
// bodies, the calls and the reading of answers are otherwise shared by Client and MultiAgent.
type payload interface{ appendJSON(dst []byte) []byte }

type flat []float32

func (v flat) appendJSON(dst []byte) []byte { return wire.AppendFloats(dst, v) }

type agents map[string][]float32

// appendJSON writes an object of agent id -> flat array, in sorted id order.
func (m agents) appendJSON(dst []byte) []byte {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst = append(dst, '{')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = wire.AppendString(dst, id)
		dst = append(dst, ':')
		dst = wire.AppendFloats(dst, m[id])
	}
	return append(dst, '}')
}

// appendEpisodeBody writes {"observation": obs (, "action": act) (, "truncated": true)}.
func appendEpisodeBody(dst []byte, obs, act payload, truncated bool) []byte {
	dst = append(dst, `{"observation":`...)
	dst = obs.appendJSON(dst)
	if act != nil {
		dst = append(dst, `,"action":`...)
		dst = act.appendJSON(dst)
	}
	if truncated {
		dst = append(dst, `,"truncated":true`...)
	}
	return append(dst, '}')
}

// send posts {"observation": obs, ...} (see appendEpisodeBody) to endpoint op of episode id
// and, when read is not nil, calls it with the decoder at the answer's "action" member.
func (c *Client) send(ctx context.Context, id, op string, obs, act payload, truncated bool, read func(d *wire.Decoder) error) error {
	b := c.get()
	defer c.put(b)
	b.req = appendEpisodeBody(b.req[:0], obs, act, truncated)
	path := episodePath(id, op)
	if _, err := c.do(ctx, b, http.MethodPost, path, true); err != nil || read == nil {
		return err
	}
	got := false
	b.dec.Reset(b.resp)
	err := b.dec.Object(func(key []byte) error {
		if string(key) != "action" {
			return b.dec.Skip()
		}
		got = true
		return read(&b.dec)
	})
	if err == nil && !got {
		err = errors.New("no action")
	}
	if err != nil {
		return badResponse(path, err)
	}
	return nil
}

// GetAction reports obs for episode id and returns the action to take (a new slice), waiting
// for the server's sampler.
func (c *Client) GetAction(ctx context.Context, id string, obs []float32) ([]float32, error) {
	return c.AppendAction(ctx, nil, id, obs)
}

// AppendAction is GetAction appending the action to dst.
func (c *Client) AppendAction(ctx context.Context, dst []float32, id string, obs []float32) ([]float32, error) {
	sp, err := c.Spaces(ctx)
	if err != nil {
		return dst, err
	}
	n := len(dst)
	err = c.send(ctx, id, "action", flat(obs), nil, false, func(d *wire.Decoder) error {
		var err error
		if dst, err = d.Value(dst, sp.Action); err == nil && len(dst)-n != sp.Action.Size() {
			err = fmt.Errorf("action with %d values, want %d", len(dst)-n, sp.Action.Size())
		}
		return err
	})
	if err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// LogAction reports obs for episode id with the action the simulator took itself.
func (c *Client) LogAction(ctx context.Context, id string, obs, action []float32) error {
	return c.send(ctx, id, "log_action", flat(obs), flat(action), false, nil)
}

// LogReturns adds reward to the episode's current step; info, when not nil, replaces the
// step's info (it is sent with encoding/json).
func (c *Client) LogReturns(ctx context.Context, id string, reward float64, info map[string]any) error {
	b := c.get()
	defer c.put(b)
	b.req = append(b.req[:0], `{"reward":`...)
	b.req = wire.AppendFloat64(b.req, reward)
	if info != nil {
		data, err := json.Marshal(info)
		if err != nil {
			return fmt.Errorf("client: info: %w", err)
		}
		b.req = append(b.req, `,"info":`...)
		b.req = append(b.req, data...)
	}
	b.req = append(b.req, '}')
	_, err := c.do(ctx, b, http.MethodPost, episodePath(id, "returns"), true)
	return err
}

// EndEpisode reports the episode's final observation (terminated) and ends it.
func (c *Client) EndEpisode(ctx context.Context, id string, obs []float32) error {
	return c.end(ctx, id, obs, false)
}

// EndEpisodeTruncated is EndEpisode for an episode cut short (a time limit): the sampler
// bootstraps its return from the final observation's value.
func (c *Client) EndEpisodeTruncated(ctx context.Context, id string, obs []float32) error {
	return c.end(ctx, id, obs, true)
}

func (c *Client) end(ctx context.Context, id string, obs []float32, truncated bool) error {
	return c.send(ctx, id, "end", flat(obs), nil, truncated, nil)
}

// Act returns the actions for a batch of observations (stateless, /v1/act). explore nil
// means the server's default.
func (c *Client) Act(ctx context.Context, obs [][]float32, explore *bool) ([][]float32, error) {
	sp, err := c.Spaces(ctx)
	if err != nil {
		return nil, err
	}
	flat := make([]float32, 0, len(obs)*sp.Observation.Size())
	for _, o := range obs {
		flat = append(flat, o...)
	}
	acts, err := c.AppendActs(ctx, nil, flat, len(obs), explore)
	if err != nil {
		return nil, err
	}
	w := sp.Action.Size()
	out := make([][]float32, len(obs))
	for i := range out {
		out[i] = acts[i*w : (i+1)*w : (i+1)*w]
	}
	return out, nil
}

// AppendActs is Act for n observations in one flat slice (n rows of the observation
// space's raw layout), appending the n actions to dst in the same layout.
func (c *Client) AppendActs(ctx context.Context, dst, obs []float32, n int, explore *bool) ([]float32, error) {
	sp, err := c.Spaces(ctx)
	if err != nil {
		return dst, err
	}
	ow := sp.Observation.Size()
	if len(obs) != n*ow {
		return dst, fmt.Errorf("client: Act: %d observation values for %d observations of %d", len(obs), n, ow)
	}
	b := c.get()
	defer c.put(b)
	b.req = append(b.req[:0], `{"observations":[`...)
	for i := range n {
		if i > 0 {
			b.req = append(b.req, ',')
		}
		b.req = wire.AppendFloats(b.req, obs[i*ow:(i+1)*ow])
	}
	b.req = append(b.req, ']')
	if explore != nil {
		if *explore {
			b.req = append(b.req, `,"explore":true`...)
		} else {
			b.req = append(b.req, `,"explore":false`...)
		}
	}
	b.req = append(b.req, '}')
	const path = "/v1/act"
	if _, err := c.do(ctx, b, http.MethodPost, path, true); err != nil {
		return dst, err
	}
	start := len(dst)
	got := false
	b.dec.Reset(b.resp)
	err = b.dec.Object(func(key []byte) error {
		if string(key) != "actions" {
			return b.dec.Skip()
		}
		got = true
		return b.dec.Array(func(int) error {
			var err error
			dst, err = b.dec.Value(dst, sp.Action)
			return err
		})
	})
	if err == nil && !got {
		err = errors.New("no actions")
	}
	if err == nil && len(dst)-start != n*sp.Action.Size() {
		err = fmt.Errorf("%d action values for %d observations, want %d each", len(dst)-start, n, sp.Action.Size())
	}
	if err != nil {
		return dst[:start], badResponse(path, err)
	}
	return dst, nil
}
