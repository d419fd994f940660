package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/scaleout"
)

// publishFlags are sample run's flags for sending batches to NATS instead of a file.
type publishFlags struct {
	target, store, sampler, maxBytes string
	waitDrained                      bool
	nats                             natsFlags
}

func (p *publishFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.target, "publish", "", "publish the sample batches to NATS JetStream: 'embedded' (a server in this process, its URL printed on stderr) or a server URL nats://HOST:PORT")
	fs.StringVar(&p.store, "store", "nats-store", "with --publish embedded: directory of JetStream's files")
	fs.StringVar(&p.sampler, "sampler", "", "this sampler's name in message ids and subjects (default: host name and process id)")
	fs.StringVar(&p.maxBytes, "stream-max-bytes", "1GiB", "byte limit of the run's stream when this run creates it (a full stream makes the runners wait)")
	fs.BoolVar(&p.waitDrained, "wait-drained", true, "with --publish embedded: after sampling, keep serving until a consumer has taken every message (or until interrupted)")
	p.nats.registerAuth(fs)
}

// publishSession is a run's connection to NATS and its publisher.
type publishSession struct {
	f      *publishFlags
	broker *scaleout.Broker // with --publish embedded
	nc     *nats.Conn
	js     jetstream.JetStream
	pub    *scaleout.Publisher
}

var nonToken = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// defaultSampler is host-pid, made a valid name.
func defaultSampler() string {
	h, _ := os.Hostname()
	s := nonToken.ReplaceAllString(fmt.Sprintf("%s-%d", h, os.Getpid()), "_")
	if len(s) > 64 {
		s = s[len(s)-64:]
	}
	return s
}

// startPublish connects (or starts the embedded server), creates the run's stream where it
// is missing and starts a publisher that gives batches back through release.
func startPublish(f *publishFlags, meta map[string]string, release func(*envrunner.MultiAgentBatch), stderr io.Writer) (_ *publishSession, err error) {
	if err := f.nats.check(); err != nil {
		return nil, err
	}
	if f.sampler == "" {
		f.sampler = defaultSampler()
	}
	if err := scaleout.CheckName("sampler", f.sampler); err != nil {
		return nil, usagef("--sampler: %v", err)
	}
	maxBytes, err := parseSize(f.maxBytes)
	if err != nil || maxBytes < 1 {
		return nil, usagef("--stream-max-bytes %q: want a positive size", f.maxBytes)
	}
	ps := &publishSession{f: f}
	defer func() {
		if err != nil {
			ps.shutdown()
		}
	}()
	if f.target == "embedded" {
		if ps.broker, err = scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: f.store, Token: f.nats.token}); err != nil {
			return nil, err
		}
		printURL(stderr, ps.broker.URL(), f.nats.run)
		if ps.nc, err = ps.broker.Connect(); err != nil {
			return nil, err
		}
		if ps.js, err = jetstream.New(ps.nc); err != nil {
			return nil, err
		}
	} else {
		f.nats.server = f.target
		if ps.nc, ps.js, err = f.nats.connect("sample run " + f.sampler); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := scaleout.EnsureRun(ctx, ps.js, f.nats.run, scaleout.RunConfig{MaxBytes: maxBytes}); err != nil {
		return nil, err
	}
	ps.pub, err = scaleout.NewPublisher(context.Background(), ps.nc, ps.js, scaleout.PublisherOptions{
		Run: f.nats.run, Sampler: f.sampler, Metadata: meta, OnPublished: release})
	return ps, err
}

// close publishes what is queued; with the embedded server and --wait-drained it then serves
// until the stream is empty or ctx is done.
func (ps *publishSession) close(ctx context.Context, stderr io.Writer) error {
	err := ps.pub.Close()
	if err == nil && ps.broker != nil && ps.f.waitDrained {
		err = waitDrained(ctx, ps.js, ps.f.nats.run, stderr)
	}
	ps.shutdown()
	return err
}

func (ps *publishSession) shutdown() {
	if ps.pub != nil {
		ps.pub.Close()
	}
	if ps.nc != nil {
		ps.nc.Close()
	}
	if ps.broker != nil {
		ps.broker.Close()
	}
}

// waitDrained polls the run's stream until it holds no message or ctx is done.
func waitDrained(ctx context.Context, js jetstream.JetStream, run string, stderr io.Writer) error {
	told := false
	for {
		s, err := js.Stream(ctx, scaleout.StreamName(run))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		n := s.CachedInfo().State.Msgs
		if n == 0 {
			return nil
		}
		if !told {
			fmt.Fprintf(stderr, "sample: sampling done; serving until a consumer has taken the %s left (sample drain --run %s), or until interrupted\n", plural(n, "message", "messages"), run)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// errOutAndPublish is the error for --out with --publish.
var errOutAndPublish = errors.New("give --out or --publish, not both")
