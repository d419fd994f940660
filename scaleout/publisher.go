package scaleout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
)

// PublisherOptions configure a Publisher.
type PublisherOptions struct {
	Run, Sampler string
	// QueueSize is how many batches Write accepts before it blocks (4 when 0).
	QueueSize int
	// OnPublished gets back every batch that Write accepted, once, in order, on the
	// publishing goroutine, once it has been encoded (or dropped after a failure): from then
	// on the caller may reuse it.
	OnPublished func(*envrunner.MultiAgentBatch)
	// OnAcked, when set, is called on the publishing goroutine for every message the stream
	// has acknowledged (also as a duplicate of an earlier publish of it): its id and rows.
	// What it was told is in the stream; a batch split into several messages is reported
	// message by message.
	OnAcked func(msgID string, rows int)
	// Metadata goes into every message's Arrow schema (see output.Source).
	Metadata map[string]string
	// MaxPayload caps the message size; 0 takes the server's (nats.Conn.MaxPayload).
	MaxPayload int
	// Window is how many messages may be on their way to the stream, published and not yet
	// acknowledged (DefaultWindow when 0; 1 waits for each acknowledgement before the next
	// publish).
	// While the stream stores and acknowledges one message, the publisher encodes and sends
	// the next ones. A process killed with messages on their way may have put some of them
	// in the stream without OnAcked having been told: at most Window messages.
	Window int
}

// DefaultWindow is PublisherOptions.Window's default. Against one message at a time (with
// the reused buffers) it gave sample run --publish embedded (2 workers, CartPole, 256 envs)
// 1.20-1.26 times the rows/s (scripts/bench_publish.sh, uncompressed messages then).
const DefaultWindow = 4

// PublisherStats count what a Publisher did.
type PublisherStats struct {
	Batches, Messages, Rows, Bytes int64
	// Full counts publishes refused because the stream was full (back-pressure), Retries
	// every repeated publish (full stream, lost connection, timeout), Duplicates the
	// messages the server had already (a retry of a publish that had arrived).
	Full, Retries, Duplicates int64
}

type queued struct {
	m       *envrunner.MultiAgentBatch
	version uint64
}

// inflight is a message published and not yet acknowledged.
type inflight struct {
	msg  *nats.Msg
	id   string
	rows int
	last bool // the last message of its batch
	ack  jetstream.PubAckFuture
	err  error // the publish failed before it left (ack is nil)
}

// Publisher publishes sample batches to a run's stream from a goroutine of its own.
type Publisher struct {
	js      jetstream.JetStream
	async   jetstream.JetStream // publishes with a bound on the wait for an acknowledgement
	o       PublisherOptions
	ctx     context.Context
	subject string
	limit   int
	queue   chan queued
	done    chan struct{}
	version atomic.Uint64

	mu     sync.Mutex
	err    error
	closed bool
	stats  PublisherStats
	seq    uint64
	batch  uint64

	samplers jetstream.KeyValue // nil until reached
	reported time.Time

	// The publishing goroutine's own.
	enc     partEncoder
	pending []inflight // oldest first
}

// SamplerState is what a Publisher reports in the run's sampler bucket.
type SamplerState struct {
	Sampler       string         `json:"sampler"`
	PolicyVersion uint64         `json:"policy_version"`
	Stats         PublisherStats `json:"stats"`
	Updated       time.Time      `json:"updated"`
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("scaleout: publisher closed")

// NewPublisher starts a publisher. The run's stream must exist (EnsureRun). Cancelling ctx
// stops retries: the publisher fails with ctx's error.
func NewPublisher(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, o PublisherOptions) (*Publisher, error) {
	if err := CheckName("run", o.Run); err != nil {
		return nil, err
	}
	if err := CheckName("sampler", o.Sampler); err != nil {
		return nil, err
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	limit := o.MaxPayload
	if limit <= 0 || int64(limit) > nc.MaxPayload() {
		limit = int(nc.MaxPayload())
	}
	// Headers count towards the payload limit.
	limit -= 1024
	if limit < 4096 {
		return nil, fmt.Errorf("scaleout: the server's max payload (%d bytes) is too small", nc.MaxPayload())
	}
	async, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(10*time.Second),
		jetstream.WithPublishAsyncMaxPending(o.Window+1))
	if err != nil {
		return nil, err
	}
	p := &Publisher{js: js, async: async, o: o, ctx: ctx, subject: Subject(o.Run, o.Sampler), limit: limit,
		queue: make(chan queued, o.QueueSize), done: make(chan struct{}), enc: partEncoder{limit: limit}}
	go p.loop()
	return p, nil
}

// SetPolicyVersion tags the batches written from now on with version.
func (p *Publisher) SetPolicyVersion(v uint64) { p.version.Store(v) }

// Write hands m to the publisher; it blocks while the queue is full (back-pressure). The
// caller gets m back through OnPublished. After a failure Write returns the error and m is
// not taken.
func (p *Publisher) Write(m *envrunner.MultiAgentBatch) error {
	p.mu.Lock()
	err, closed := p.err, p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err != nil {
		return err
	}
	select {
	case p.queue <- queued{m, p.version.Load()}:
		return nil
	case <-p.done:
		return p.Err()
	}
}

// Err is the publisher's first error, if any.
func (p *Publisher) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stats returns the counts so far.
func (p *Publisher) Stats() PublisherStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close publishes what is queued and stops. It returns the first error. Safe to call twice.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
	p.mu.Unlock()
	<-p.done
	return p.Err()
}

func (p *Publisher) loop() {
	defer close(p.done)
	var bd arrowbatch.Builder
	for q := range p.queue {
		if p.Err() == nil {
			p.fail(p.publishBatch(&bd, q))
		}
		if p.o.OnPublished != nil {
			p.o.OnPublished(q.m)
		}
		if time.Since(p.reported) >= time.Second {
			p.report(q.version)
		}
	}
	if p.Err() == nil {
		p.fail(p.settle(0))
	}
	p.report(p.version.Load())
}

// fail keeps the first error.
func (p *Publisher) fail(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

// report puts the publisher's state into the sampler bucket; a failure only costs the report.
func (p *Publisher) report(version uint64) {
	p.reported = time.Now()
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
	defer cancel()
	if p.samplers == nil {
		kv, err := p.js.KeyValue(ctx, SamplerBucket(p.o.Run))
		if err != nil {
			return
		}
		p.samplers = kv
	}
	st := SamplerState{Sampler: p.o.Sampler, PolicyVersion: version, Stats: p.Stats(), Updated: time.Now().UTC()}
	val, _ := json.Marshal(st)
	p.samplers.Put(ctx, p.o.Sampler, val)
}

// publishBatch encodes q's batch and publishes its messages, leaving at most Window of them
// unacknowledged. Once it returns, the batch itself is no longer needed.
func (p *Publisher) publishBatch(bd *arrowbatch.Builder, q queued) error {
	rec, ok, err := bd.Build(q.m, p.o.Metadata)
	if err != nil {
		return fmt.Errorf("scaleout: build record: %w", err)
	}
	if !ok {
		return nil
	}
	parts, err := p.enc.encode(rec, q.m.EnvSteps)
	rec.Release()
	if err != nil {
		return err
	}
	p.batch++
	created := time.Now().UTC().Format(time.RFC3339Nano)
	for i, pt := range parts {
		if err := p.settle(p.o.Window - 1); err != nil {
			return err
		}
		p.seq++
		msg := nats.NewMsg(p.subject)
		msg.Data = pt.data
		msg.Header.Set(HeaderPolicyVersion, strconv.FormatUint(q.version, 10))
		msg.Header.Set(HeaderEnvSteps, strconv.Itoa(pt.envSteps))
		msg.Header.Set(HeaderCreated, created)
		msg.Header.Set(HeaderSampler, p.o.Sampler)
		msg.Header.Set(HeaderBatch, strconv.FormatUint(p.batch, 10))
		msg.Header.Set(HeaderPart, fmt.Sprintf("%d/%d", i+1, len(parts)))
		f := inflight{msg: msg, id: p.o.Sampler + "-" + strconv.FormatUint(p.seq, 10), rows: pt.rows, last: i == len(parts)-1}
		f.ack, f.err = p.async.PublishMsgAsync(msg, jetstream.WithMsgID(f.id), jetstream.WithExpectStream(StreamName(p.o.Run)))
		p.pending = append(p.pending, f)
	}
	return nil
}

// settle waits for the oldest messages on their way until at most n are left, publishing
// again each one the stream refused or that was lost.
func (p *Publisher) settle(n int) error {
	for len(p.pending) > n {
		f := p.pending[0]
		k := copy(p.pending, p.pending[1:])
		p.pending[k] = inflight{}
		p.pending = p.pending[:k]
		if err := p.resolve(f); err != nil {
			return err
		}
	}
	return nil
}

// resolve waits for f's acknowledgement; a refusal or loss worth repeating sends it again
// (see republish).
func (p *Publisher) resolve(f inflight) error {
	failed := f.err
	if f.ack != nil {
		select {
		case ack := <-f.ack.Ok():
			p.acked(f, ack.Duplicate)
			return nil
		case failed = <-f.ack.Err():
		case <-p.ctx.Done():
		}
	}
	dup, err := p.republish(f.msg, f.id, failed)
	if err != nil {
		return err
	}
	p.acked(f, dup)
	return nil
}

// acked counts f, tells OnAcked and takes its buffer back.
func (p *Publisher) acked(f inflight, duplicate bool) {
	if p.o.OnAcked != nil {
		p.o.OnAcked(f.id, f.rows)
	}
	p.mu.Lock()
	p.stats.Messages++
	p.stats.Bytes += int64(len(f.msg.Data))
	p.stats.Rows += int64(f.rows)
	if f.last {
		p.stats.Batches++
	}
	if duplicate {
		p.stats.Duplicates++
	}
	p.mu.Unlock()
	p.enc.recycle(f.msg.Data)
}

// republish sends msg, whose last publish failed with failed, until the stream has it,
// waiting for each answer, with the same message id every time: at once, then after a wait
// that doubles up to half a second. It tells whether the stream had it already.
func (p *Publisher) republish(msg *nats.Msg, id string, failed error) (duplicate bool, _ error) {
	var wait time.Duration
	for {
		if p.ctx.Err() != nil {
			return false, fmt.Errorf("scaleout: publish %s: %w", id, p.ctx.Err())
		}
		full, retry := classify(failed)
		if !retry {
			return false, fmt.Errorf("scaleout: publish %s to %s: %w", id, StreamName(p.o.Run), failed)
		}
		p.mu.Lock()
		p.stats.Retries++
		if full {
			p.stats.Full++
		}
		p.mu.Unlock()
		if wait > 0 {
			if time.Since(p.reported) >= time.Second {
				p.report(p.version.Load()) // a sampler held back still reports
			}
			select {
			case <-time.After(wait):
			case <-p.ctx.Done():
			}
		}
		wait = min(max(2*wait, 5*time.Millisecond), 500*time.Millisecond)
		ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
		ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id), jetstream.WithExpectStream(StreamName(p.o.Run)))
		cancel()
		if err == nil {
			return ack.Duplicate, nil
		}
		failed = err
	}
}

// classify tells a full stream (back-pressure) and other passing failures (lost connection,
// timeout, a server restarting) from errors that repeating cannot fix.
func classify(err error) (full, retry bool) {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.ErrorCode == 10077: // JSStreamStoreFailedF: maximum bytes exceeded (discard new)
			return true, true
		case apiErr.Code == 503: // JetStream temporarily unavailable
			return false, true
		}
		return false, false
	}
	switch {
	case errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum), errors.Is(err, nats.ErrMaxPayload),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrBadSubject):
		return false, false
	}
	return false, true
}
