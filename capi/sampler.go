package main

/*
#include <stdlib.h>
#include <string.h>
#include "sampler_internal.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// samplerOptions are onnxrl_sampler_open's options (see the header): `sample run`'s flags
// as JSON, turned into a runspec.Spec.
type samplerOptions struct {
	Env              string            `json:"env"`
	EnvConfig        json.RawMessage   `json:"env_config"`
	NumEnvs          int               `json:"num_envs"`
	Workers          int               `json:"workers"`
	Model            string            `json:"model"`
	Policies         map[string]string `json:"policies"`
	PolicyMap        [][2]string       `json:"policy_map"`
	Explore          bool              `json:"explore"`
	NormalizeActions bool              `json:"normalize_actions"`
	ClipActions      bool              `json:"clip_actions"`
	Seed             uint64            `json:"seed"`
	FragmentLength   int               `json:"fragment_length"`
	BatchMode        string            `json:"batch_mode"`
	CountStepsBy     string            `json:"count_steps_by"`
	GAE              bool              `json:"gae"`
	Gamma            float64           `json:"gamma"`
	Lambda           float64           `json:"lambda"`
	Device           string            `json:"device"`
	Threads          int               `json:"threads"`
	Remote           bool              `json:"remote"`
	RemoteWaitMS     int64             `json:"remote_wait_ms"`
	RestartFailed    bool              `json:"restart_failed"`
	MaxModelBytes    int64             `json:"max_model_bytes"`
	MaxSeqLen        int               `json:"max_seq_len"`
	StateIn          string            `json:"state_in"` // "per_row" or "per_sequence"
}

// defaultSamplerOptions are `sample run`'s defaults.
func defaultSamplerOptions() samplerOptions {
	return samplerOptions{Env: "CartPole-v1", NumEnvs: 1, Workers: 1, Explore: true, NormalizeActions: true,
		FragmentLength: 200, BatchMode: envrunner.TruncateEpisodes, CountStepsBy: envrunner.EnvSteps,
		Gamma: 0.99, Lambda: 0.95, Device: "cpu", Threads: 1, MaxModelBytes: inference.DefaultMaxModelBytes,
		MaxSeqLen: 20, StateIn: "per_row"}
}

// The bounds of a sampler's sizes: one batch of at most maxSamplerRows rows per worker.
const (
	maxSamplerWorkers = 1024
	maxFragment       = 1 << 20
	maxSamplerRows    = 1 << 28
)

func (o *samplerOptions) check() error {
	if err := o.checkSizes(); err != nil {
		return err
	}
	switch {
	case o.RemoteWaitMS < -1 || o.RemoteWaitMS > math.MaxInt64/int64(time.Millisecond):
		return fmt.Errorf("\"remote_wait_ms\" %d: want milliseconds >= 0, or -1 to wait for every sub-environment", o.RemoteWaitMS)
	case o.RemoteWaitMS != 0 && !o.Remote:
		return errors.New("\"remote_wait_ms\" needs \"remote\": true (only a RemoteVectorEnv waits for its sub-environments)")
	case o.StateIn != "per_row" && o.StateIn != "per_sequence":
		return fmt.Errorf("\"state_in\" %q: want \"per_row\" or \"per_sequence\" (RLlib's layout)", o.StateIn)
	}
	return o.checkPolicies()
}

// checkSizes checks the counts and sizes: sub-environments, workers, fragment and batch
// rows, model bytes, sequence length.
func (o *samplerOptions) checkSizes() error {
	switch {
	case o.NumEnvs < 1 || o.NumEnvs > maxVecEnvs:
		return fmt.Errorf("\"num_envs\" %d: want 1..%d", o.NumEnvs, maxVecEnvs)
	case o.Workers < 1 || o.Workers > maxSamplerWorkers || o.Workers > o.NumEnvs:
		return fmt.Errorf("\"workers\" %d: want 1..min(num_envs, %d): every worker needs a sub-environment", o.Workers, maxSamplerWorkers)
	case o.FragmentLength < 1 || o.FragmentLength > maxFragment:
		return fmt.Errorf("\"fragment_length\" %d: want 1..%d", o.FragmentLength, maxFragment)
	case int64(o.FragmentLength)*int64(o.NumEnvs) > maxSamplerRows:
		return fmt.Errorf("\"fragment_length\" %d times \"num_envs\" %d: a batch of more than %d rows", o.FragmentLength, o.NumEnvs, maxSamplerRows)
	case o.MaxModelBytes < 1:
		return fmt.Errorf("\"max_model_bytes\" %d: want a positive size in bytes", o.MaxModelBytes)
	case o.MaxSeqLen < 1 || o.MaxSeqLen > maxFragment:
		return fmt.Errorf("\"max_seq_len\" %d: want 1..%d", o.MaxSeqLen, maxFragment)
	}
	return nil
}

// checkPolicies checks "model" against "policies", and the entries of "policies" and
// "policy_map".
func (o *samplerOptions) checkPolicies() error {
	if o.Model != "" && len(o.Policies) > 0 {
		return errors.New("give \"model\" or \"policies\", not both")
	}
	for id, m := range o.Policies {
		if id == "" || m == "" || strings.Contains(id, "=") {
			return fmt.Errorf("\"policies\" {%q: %q}: want a non-empty id without '=' and a model", id, m)
		}
	}
	for _, r := range o.PolicyMap {
		if r[0] == "" || r[1] == "" || strings.Contains(r[0], "=") {
			return fmt.Errorf("\"policy_map\" [%q, %q]: want [agent glob without '=', policy id]", r[0], r[1])
		}
	}
	return nil
}

// spec turns the options into the runspec.Spec that `sample run` would build from the same
// flags.
func (o *samplerOptions) spec() (runspec.Spec, error) {
	cfg := ""
	if t := bytes.TrimSpace(o.EnvConfig); len(t) > 0 && string(t) != "null" {
		switch t[0] {
		case '{':
			cfg = string(t)
		case '"':
			if err := json.Unmarshal(t, &cfg); err != nil {
				return runspec.Spec{}, err
			}
		default:
			return runspec.Spec{}, fmt.Errorf("\"env_config\" %.40s: want a JSON object (or a key=value,... string)", t)
		}
	}
	s := runspec.Spec{Env: o.Env, EnvConfig: cfg, NumEnvs: o.NumEnvs, Workers: o.Workers, Model: o.Model,
		Explore: o.Explore, NormalizeActions: o.NormalizeActions, ClipActions: o.ClipActions, Seed: o.Seed,
		FragmentLength: o.FragmentLength, BatchMode: o.BatchMode, CountStepsBy: o.CountStepsBy,
		GAE: o.GAE, Gamma: o.Gamma, Lambda: o.Lambda, Device: o.Device, Threads: o.Threads,
		Remote: o.Remote, BatchWait: time.Duration(o.RemoteWaitMS) * time.Millisecond, RestartFailed: o.RestartFailed,
		MaxSeqLen: o.MaxSeqLen, StatePerSequence: o.StateIn == "per_sequence"}
	if o.RemoteWaitMS == -1 {
		s.BatchWait = env.WaitAll
	}
	for id, m := range o.Policies {
		s.Policies = append(s.Policies, id+"="+m)
	}
	for _, r := range o.PolicyMap {
		s.PolicyMap = append(s.PolicyMap, r[0]+"="+r[1])
	}
	limit := o.MaxModelBytes
	s.OpenModel = func(name string) (*models.Policy, error) { return loadPolicy(name, limit) }
	return s, nil
}

// The dtypes of onnxrl_column.
const (
	dtypeFloat32 = 1
	dtypeInt32   = 2
	dtypeInt64   = 3
	dtypeBool    = 4 // one byte per value, 0 or 1
)

// sampler is an onnxrl_sampler: `sample run`'s runners (built by runspec), pulled one batch
// per call. The batch the caller holds is cur; its columns are described to C by one
// capi_column array per policy (C memory, made once), pointing into the batch's own Go
// arrays, pinned until the next sample. A mutex serialises calls on one handle.
type sampler struct {
	mu     sync.Mutex
	run    *runspec.Run
	src    batchSource
	cur    *envrunner.MultiAgentBatch
	pols   []*policyColumns // by index: run.Policies' order (sorted ids)
	names  map[string]*C.char
	pins   pinSet
	err    error // a failed sample: every later one fails the same way
	closed bool

	batches     int64
	arrow       arrowbatch.Builder
	arrowPins   pinSet
	infoJSON    *C.char // onnxrl_sampler_info's JSON, C memory
	infoLen     int
	metricsBuf  *C.char // onnxrl_sampler_metrics' JSON, C memory of metricsCap bytes
	metricsCap  int
	metricsTake []envrunner.RolloutMetrics
	episodes    episodeSummary
}

// policyColumns are one policy's column views.
type policyColumns struct {
	id      string
	cols    *C.capi_column // capacity ncap
	ncap, n int
	rows    int
	intActs []int64 // the actions of an integer space, converted from the batch's float32
}

// openSampler builds the sampler of the options JSON.
func openSampler(optionsJSON []byte) (*sampler, error) {
	o := defaultSamplerOptions()
	if err := readOptions(optionsJSON, &o); err != nil {
		return nil, err
	}
	spec, err := o.spec()
	if err != nil {
		return nil, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: options: %w", err))
	}
	if !registered(spec.Env) {
		return nil, withStatus(statusNotFound, fmt.Errorf("onnxrl: unknown environment %q (registered: %v; see sample run --list-envs)", spec.Env, env.Names()))
	}
	// The environment is made once first, so that a config it refuses is the caller's
	// mistake (INVALID_ARGUMENT), told apart from what goes wrong later (a model).
	cfg, err := env.ParseConfig(spec.EnvConfig)
	if err == nil {
		_, err = runspec.ProbeEnv(spec.Env, cfg)
	}
	if err != nil {
		return nil, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: env_config: %w", err))
	}
	run, err := runspec.Build(spec)
	if err != nil {
		var se *runspec.SpecError
		var ce *codedError
		switch {
		case errors.As(err, &se):
			return nil, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: options: %w (the flag of sample run named)", err))
		case errors.As(err, &ce):
			return nil, err
		}
		return nil, withStatus(openStatus(err), fmt.Errorf("onnxrl: %w", err))
	}
	s := &sampler{run: run, names: map[string]*C.char{}}
	if len(run.Group.Runners()) == 1 {
		s.src = &oneRunner{r: run.Group.Runners()[0]}
	} else {
		s.src = startWorkers(run.Group)
	}
	for _, id := range run.Policies {
		s.pols = append(s.pols, &policyColumns{id: id})
	}
	info, err := s.info(&o)
	if err != nil {
		s.close()
		return nil, withStatus(statusInternal, err)
	}
	s.infoJSON, s.infoLen = (*C.char)(C.CBytes(append(info, 0))), len(info)
	return s, nil
}

// info is onnxrl_sampler_info's JSON: what was built.
func (s *sampler) info(o *samplerOptions) ([]byte, error) {
	inf := struct {
		Env              string       `json:"env"`
		Model            string       `json:"model"`
		NumEnvs          int          `json:"num_envs"`
		Workers          int          `json:"workers"`
		Policies         []string     `json:"policies"`
		Agents           []string     `json:"agents,omitempty"`
		ObservationSpace spaces.Space `json:"observation_space"`
		ActionSpace      spaces.Space `json:"action_space"`
		FragmentLength   int          `json:"fragment_length"`
		BatchMode        string       `json:"batch_mode"`
		Seed             uint64       `json:"seed"`
		Explore          bool         `json:"explore"`
	}{Env: o.Env, Model: s.run.Model, NumEnvs: o.NumEnvs, Workers: o.Workers, Policies: s.run.Policies,
		Agents: s.run.Info.Agents, ObservationSpace: s.run.Info.Obs, ActionSpace: s.run.Info.Act,
		FragmentLength: o.FragmentLength, BatchMode: o.BatchMode, Seed: o.Seed, Explore: o.Explore}
	return json.Marshal(inf)
}

// errSamplerClosed is a call on a sampler that close has released (the handle is gone
// before; this guards a call that waited for close's lock).
var errSamplerClosed = errors.New("onnxrl: the sampler was closed")

// sample steps until the next batch and describes its columns. The previous batch goes back
// to its runner first: its views end here.
func (s *sampler) sample() (envSteps, agentSteps int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, 0, withStatus(statusState, errSamplerClosed)
	}
	if s.err != nil {
		return 0, 0, withStatus(statusState, fmt.Errorf("onnxrl: the sampler failed before: %w", s.err))
	}
	b, err := nextBatch(s.src)
	if err != nil {
		s.err = err
		s.cur = nil
		s.pins.unpin()
		s.arrowPins.unpin()
		return 0, 0, withStatus(failStatus(err), err)
	}
	s.cur = b
	s.batches++
	s.takeMetrics()
	// Unpin and pin back to back: the first Pinner's store makes the round trip through the
	// processor's cache (see pinSet).
	s.pins.unpin()
	s.arrowPins.unpin()
	for _, pc := range s.pols {
		s.describe(pc, b.PolicyBatches[pc.id])
	}
	return int64(b.EnvSteps), int64(b.AgentSteps), nil
}

// describe fills pc's C column array with b's columns (none for a policy without rows in
// this batch), in the order and with the names of the JSON lines output.
func (s *sampler) describe(pc *policyColumns, b *envrunner.SampleBatch) {
	pc.n, pc.rows = 0, 0
	if b == nil || b.Count == 0 {
		return
	}
	n := b.Count
	pc.rows = n
	if need := 13 + 2*len(b.StateWidths) + 3; pc.ncap < need {
		if pc.cols != nil {
			C.free(unsafe.Pointer(pc.cols))
		}
		pc.cols = (*C.capi_column)(C.calloc(C.size_t(need), C.size_t(unsafe.Sizeof(C.capi_column{}))))
		pc.ncap = need
	}
	cols := unsafe.Slice(pc.cols, pc.ncap)
	add := func(name string, data unsafe.Pointer, dtype int, rows, width int, matrix bool) {
		c := &cols[pc.n]
		pc.n++
		c.name = s.cname(name)
		c.data = data
		s.pins.pin(data)
		c.dtype = C.int32_t(dtype)
		c.shape[0], c.shape[1] = C.int64_t(rows), C.int64_t(width)
		c.ndim = 1
		if matrix {
			c.ndim = 2
		}
	}
	f32 := func(name string, v []float32, width int, matrix bool) {
		add(name, unsafe.Pointer(unsafe.SliceData(v)), dtypeFloat32, n, width, matrix)
	}
	i32 := func(name string, v []int32) {
		add(name, unsafe.Pointer(unsafe.SliceData(v)), dtypeInt32, len(v), 1, false)
	}
	f32("obs", b.Obs, b.ObsWidth, true)
	f32("new_obs", b.NewObs, b.ObsWidth, true)
	switch k := arrowbatch.BatchLayout(b).Actions; k {
	case arrowbatch.RealActions:
		f32("actions", b.Actions, b.ActionWidth, true)
	default:
		pc.intActs = pc.intActs[:0]
		for _, v := range b.Actions {
			pc.intActs = append(pc.intActs, arrowbatch.IntAction(v))
		}
		add("actions", unsafe.Pointer(unsafe.SliceData(pc.intActs)), dtypeInt64, n, b.ActionWidth, k == arrowbatch.IntVectorActions)
	}
	f32("rewards", b.Rewards, 1, false)
	add("terminateds", unsafe.Pointer(unsafe.SliceData(b.Terminateds)), dtypeBool, n, 1, false)
	add("truncateds", unsafe.Pointer(unsafe.SliceData(b.Truncateds)), dtypeBool, n, 1, false)
	add("eps_id", unsafe.Pointer(unsafe.SliceData(b.EpsID)), dtypeInt64, n, 1, false)
	i32("env_id", b.EnvID)
	i32("agent_index", b.AgentIndex)
	i32("t", b.T)
	if len(b.ActionDistInputs) > 0 {
		f32("action_dist_inputs", b.ActionDistInputs, b.DistWidth, true)
	}
	if len(b.ActionLogp) > 0 {
		f32("action_logp", b.ActionLogp, 1, false)
	}
	if len(b.VfPreds) > 0 {
		f32("vf_preds", b.VfPreds, 1, false)
	}
	for k, w := range b.StateWidths { // a row per row, or per sequence ("state_in": "per_sequence")
		add(arrowbatch.StateInName(k), unsafe.Pointer(unsafe.SliceData(b.StateIn[k])), dtypeFloat32, len(b.StateIn[k])/max(w, 1), w, true)
	}
	for k, w := range b.StateWidths {
		f32(arrowbatch.StateOutName(k), b.StateOut[k], w, true)
	}
	if len(b.SeqLens) > 0 {
		i32("seq_lens", b.SeqLens)
	}
	if len(b.Advantages) > 0 {
		f32("advantages", b.Advantages, 1, false)
	}
	if len(b.ValueTargets) > 0 {
		f32("value_targets", b.ValueTargets, 1, false)
	}
}

// cname returns the column name as a C string, made once per name.
func (s *sampler) cname(name string) *C.char {
	c, ok := s.names[name]
	if !ok {
		c = C.CString(name)
		s.names[name] = c
	}
	return c
}

// columns returns policy i's column views of the current batch.
func (s *sampler) columns(i int64) (*C.capi_column, int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, 0, 0, err
	}
	if i < 0 || i >= int64(len(s.pols)) {
		return nil, 0, 0, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: policy %d: the sampler has %d policies (0..%d)", i, len(s.pols), len(s.pols)-1))
	}
	pc := s.pols[i]
	return pc.cols, pc.n, pc.rows, nil
}

// usable is nil when there is a current batch to read.
func (s *sampler) usable() error {
	switch {
	case s.closed:
		return withStatus(statusState, errSamplerClosed)
	case s.cur == nil:
		return withStatus(statusState, errors.New("onnxrl: no batch yet: call onnxrl_sampler_sample first"))
	}
	return nil
}

// exportArrow exports the current batch as one Arrow record through the C Data Interface
// (arrowExport, sampler_arrow.go): the batch's own arrays where arrowbatch shares them.
func (s *sampler) exportArrow(array, schema unsafe.Pointer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	for _, b := range s.cur.PolicyBatches {
		if b.StatePerSequence && len(b.SeqLens) != b.Count {
			return withStatus(statusState, errors.New("onnxrl: the batch holds state_in per sequence (\"state_in\": \"per_sequence\"), and an Arrow record a row per transition"))
		}
	}
	rec, ok, err := s.arrow.Build(s.cur, nil)
	if err != nil {
		return withStatus(statusInternal, err)
	}
	if !ok {
		return withStatus(statusState, errors.New("onnxrl: the batch has no rows"))
	}
	defer rec.Release()
	arrowExport(rec, array, schema, &s.arrowPins)
	return nil
}

// takeMetrics takes the episodes that ended from the runners into the totals, after every
// batch (as `sample run` does), so that the runners keep none and steady state allocates
// nothing however seldom metrics is called.
func (s *sampler) takeMetrics() {
	s.metricsTake = s.run.Group.Metrics(s.metricsTake[:0])
	s.episodes.add(s.metricsTake)
	clear(s.metricsTake) // no references kept to the episodes' maps and slices
}

// metrics returns the metrics JSON in C memory valid until the next metrics call or close:
// counters, perf stats and a summary of the episodes that ended since the last call.
func (s *sampler) metrics() (*C.char, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, withStatus(statusState, errSamplerClosed)
	}
	s.takeMetrics()
	c, perf := s.src.stats()
	m := samplerMetrics{EnvSteps: c.EnvSteps, AgentSteps: c.AgentSteps, Episodes: c.Episodes,
		FaultyEpisodes: c.FaultyEpisodes, Batches: s.batches, Perf: perf}
	s.episodes.fill(&m)
	s.episodes = episodeSummary{}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, 0, withStatus(statusInternal, err)
	}
	if len(b)+1 > s.metricsCap {
		C.free(unsafe.Pointer(s.metricsBuf))
		s.metricsCap = 2 * (len(b) + 1)
		s.metricsBuf = (*C.char)(C.malloc(C.size_t(s.metricsCap)))
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(s.metricsBuf)), len(b)+1)
	copy(dst, b)
	dst[len(b)] = 0
	return s.metricsBuf, len(b), nil
}

// samplerMetrics is onnxrl_sampler_metrics' JSON, under RLlib's new API stack names
// (envrunner.NewAPIStackMetrics; docs/metrics.md).
type samplerMetrics struct {
	EnvSteps       int64 `json:"num_env_steps_sampled_lifetime"`
	AgentSteps     int64 `json:"num_agent_steps_sampled_lifetime"`
	Episodes       int64 `json:"num_episodes_lifetime"`
	FaultyEpisodes int64 `json:"num_env_step_failures"`
	Batches        int64 `json:"batches"`
	// The episodes that ended since the last call (faulty ones left out); the others are
	// null without one.
	NewEpisodes       int64               `json:"num_episodes"`
	EpisodeReturnMean *float64            `json:"episode_return_mean"`
	EpisodeReturnMin  *float64            `json:"episode_return_min"`
	EpisodeReturnMax  *float64            `json:"episode_return_max"`
	EpisodeLenMean    *float64            `json:"episode_len_mean"`
	Perf              envrunner.PerfStats `json:"perf"`
}

// episodeSummary sums the episodes taken since the last metrics call.
type episodeSummary struct{ envrunner.EpisodeTotals }

func (e *episodeSummary) add(ms []envrunner.RolloutMetrics) { e.Add(ms) }

func (e *episodeSummary) fill(m *samplerMetrics) {
	m.NewEpisodes = e.N
	if e.N == 0 {
		return
	}
	mean, lmean := e.Means()
	lo, hi := e.ReturnMin, e.ReturnMax
	m.EpisodeReturnMean, m.EpisodeLenMean, m.EpisodeReturnMin, m.EpisodeReturnMax = &mean, &lmean, &lo, &hi
}

// close stops the workers, closes the runners and frees the C memory, waiting for a call in
// flight.
func (s *sampler) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.cur = nil
	var errs []error
	if s.src != nil {
		errs = append(errs, s.src.close())
	}
	s.pins.unpin()
	s.arrowPins.unpin()
	errs = append(errs, s.run.Close())
	for _, pc := range s.pols {
		C.free(unsafe.Pointer(pc.cols))
		pc.cols, pc.n, pc.ncap = nil, 0, 0
	}
	for k, c := range s.names {
		C.free(unsafe.Pointer(c))
		delete(s.names, k)
	}
	C.free(unsafe.Pointer(s.infoJSON))
	C.free(unsafe.Pointer(s.metricsBuf))
	s.infoJSON, s.metricsBuf, s.metricsCap = nil, nil, 0
	return errors.Join(errs...)
}

// nextBatch is src.next with a panic of the runner (an environment's, a connector's) turned
// into an error: the sampler then fails every later call, rather than the host crashing.
func nextBatch(src batchSource) (b *envrunner.MultiAgentBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, withStatus(statusInternal, fmt.Errorf("onnxrl: the sampler panicked: %v", r))
		}
	}()
	return src.next()
}

// columnView is a Go copy of one capi_column, for the tests.
type columnView struct {
	name  string
	data  unsafe.Pointer
	dtype int
	ndim  int
	shape [2]int64
}

// views copies n capi_columns from cols.
func views(cols *C.capi_column, n int) []columnView {
	out := make([]columnView, n)
	for i, c := range unsafe.Slice(cols, n) {
		out[i] = columnView{C.GoString(c.name), unsafe.Pointer(c.data), int(c.dtype), int(c.ndim), [2]int64{int64(c.shape[0]), int64(c.shape[1])}}
	}
	return out
}
