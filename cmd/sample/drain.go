package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/scaleout"
)

const drainArgs = "--run NAME --out FILE [--server URL] [--token T | --creds FILE] [--idle-exit 5s] [--max-rows N] ..."

type drainFlags struct {
	nats                  natsFlags
	output                runspec.Output // --format, --compression; Path is --out
	out, durable          string
	idleExit, segmentTime time.Duration
	ackWait               time.Duration
	maxRows, segmentRows  int64
	maxRate               float64
	fetch                 int
	jsonOut               bool
}

// drainSummary is what sample drain prints.
type drainSummary struct {
	Run      string `json:"run"`
	Messages int64  `json:"messages"`
	Batches  int64  `json:"batches"`
	Rows     int64  `json:"rows"`
	EnvSteps int64  `json:"env_steps"`
	// Duplicates counts messages delivered again whose id this drain had written already
	// (they are acknowledged, not written).
	Duplicates int64    `json:"duplicates"`
	Out        []string `json:"out"`
	// Journal is the drain's journal, OUT.ids: the ids of the messages in the files, so that
	// a later drain into the same --out skips those the server delivers again (see
	// drainJournal). It stays beside the files; it is removed when nothing was ever
	// written to it.
	Journal string `json:"journal,omitempty"`
}

// runDrain consumes a run's stream into files: segment after segment, each segment one file
// (out, then out-000001, ... after the files that exist already), its messages acknowledged
// only once the file is committed (see drainJournal: closed, synced, its message ids
// journaled, claimed on the server, renamed into place). A drain stopped by a signal closes
// its segment first; one killed anywhere is made whole by the other drains of its --durable
// (they drop the messages it claimed) and by the next drain into its --out: nothing
// acknowledged is missing from the files and no message is in them twice.
func runDrain(args []string, stdout, stderr io.Writer) error {
	f, err := parseDrainFlags(args, stdout)
	if err != nil {
		return err
	}
	nc, js, err := f.nats.connect("sample drain")
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	setup, cancel := context.WithTimeout(ctx, 30*time.Second)
	ackWait := cmp.Or(f.ackWait, 2*f.segmentTime+time.Minute)
	c, err := scaleout.NewConsumer(setup, js, scaleout.ConsumerOptions{Run: f.nats.run, Durable: f.durable,
		AckWait: ackWait, MaxAckPending: 100000})
	cancel()
	if err != nil {
		return err
	}
	d := &drainer{f: f, c: c, sum: drainSummary{Run: f.nats.run, Out: []string{}}, stderr: stderr, seen: newIDSet(1 << 18),
		ackWait: ackWait, flush: func() error { return nc.FlushTimeout(5 * time.Second) }}
	setup, cancel = context.WithTimeout(ctx, 30*time.Second)
	err = d.openJournal(setup, js)
	cancel()
	if err != nil {
		return err
	}
	err = d.run(ctx)
	kept, cerr := d.journal.close()
	err = errors.Join(err, cerr)
	if kept {
		d.sum.Journal = d.journal.path
	}
	return errors.Join(err, d.report(stdout))
}

func parseDrainFlags(args []string, stdout io.Writer) (*drainFlags, error) {
	f := &drainFlags{}
	fs := newFlags("drain", drainArgs, stdout)
	f.nats.register(fs)
	registerOutputFlags(fs, &f.output)
	fs.StringVar(&f.out, "out", "", "output file: Parquet for .parquet, JSON lines for .jsonl or .json (see --format), in a directory that exists; later segments are numbered FILE-000001...")
	fs.StringVar(&f.durable, "durable", "drain", "durable consumer name: drains of one name share the messages")
	fs.DurationVar(&f.idleExit, "idle-exit", 0, "stop once the stream has been empty this long (0: run until interrupted)")
	fs.Int64Var(&f.maxRows, "max-rows", 0, "stop after the segment that reaches this many rows (0: no limit)")
	fs.Int64Var(&f.segmentRows, "segment-rows", 1_000_000, "close the file and acknowledge its messages after this many rows")
	fs.DurationVar(&f.segmentTime, "segment-time", time.Minute, "close the file and acknowledge its messages after this long")
	fs.IntVar(&f.fetch, "fetch", 16, "messages asked for at once")
	fs.DurationVar(&f.ackWait, "ack-wait", 0, "how long the server waits for a delivered message's acknowledgement before it delivers it again, to another drain of the same --durable (0: 2 x --segment-time + 1m; set when the durable consumer is created)")
	fs.Float64Var(&f.maxRate, "max-rate", 0, "take at most this many rows per second on average (0: as fast as it can), to leave a shared disk or link to others, or to try back-pressure")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON summary object")
	if err := parseNoArgs(fs, args); err != nil {
		return nil, err
	}
	return f, f.check()
}

// check refuses the values drain cannot drain with, and an --out that is not a sample file
// in a directory that exists.
func (f *drainFlags) check() error {
	switch {
	case f.out == "":
		return usagef("--out is required")
	case f.segmentRows < 1 || f.segmentTime <= 0 || f.fetch < 1 || f.maxRows < 0 || f.idleExit < 0 || !(f.maxRate >= 0) || math.IsInf(f.maxRate, 0) || f.ackWait < 0:
		return usagef("--segment-rows, --segment-time and --fetch must be positive, --max-rows, --idle-exit, --ack-wait and --max-rate not negative (and finite)")
	case f.ackWait > 0 && f.ackWait <= f.segmentTime:
		return usagef("--ack-wait %v must be longer than --segment-time %v (a segment's messages wait for it to close)", f.ackWait, f.segmentTime)
	}
	if err := f.nats.check(); err != nil {
		return err
	}
	f.output.Path = f.out
	if err := f.output.Check("--out"); err != nil {
		return err
	}
	_, err := f.output.Options(nil)
	return err
}

// report prints the summary: one JSON object with --json, else a line (and one for the
// journal when it is kept).
func (d *drainer) report(stdout io.Writer) error {
	s := d.sum
	if d.f.jsonOut {
		return json.NewEncoder(stdout).Encode(s)
	}
	fmt.Fprintf(stdout, "drained run %s: %s, %s, %s, %s into %v\n", s.Run, plural(s.Messages, "message", "messages"),
		plural(s.Batches, "batch", "batches"), plural(s.Rows, "row", "rows"), plural(s.EnvSteps, "env step", "env steps"), s.Out)
	if s.Journal != "" {
		fmt.Fprintf(stdout, "journal %s: the ids of the messages in these files, for the next drain into --out %s to skip those delivered again (keep it with the files)\n", s.Journal, d.f.out)
	}
	return nil
}

type drainer struct {
	f       *drainFlags
	c       *scaleout.Consumer
	sum     drainSummary
	next    int // index of the next file name to try
	w       *output.Writer
	pending []jetstream.Msg
	seen    idSet
	stderr  io.Writer
	// The current segment's counts, added to sum once it is committed: the summary counts
	// and names only files on disk under their names (a full disk left none of the
	// segment it failed in).
	segRows, segMessages, segBatches, segEnvSteps int64
	segName                                       string // the current segment's file name, written as segName.partial until committed
	journal                                       *drainJournal
	ids                                           []string
	// The claims of the durable's drains (see drainJournal) and the stream sequences of the
	// messages written to the current segment, claimed when it is committed.
	claims  *scaleout.Claims
	segSeqs scaleout.SeqRanges
	// The lease: the server delivers no message of pending or unhandled (the rest of the
	// last fetch) to another drain before leaseFrom + ackWait (their clocks restarted by
	// renew, or the messages fetched, after leaseFrom).
	ackWait   time.Duration
	leaseFrom time.Time
	unhandled []jetstream.Msg
	flush     func() error
	started   time.Time
	begun     time.Time // when the drain started (--max-rate)
	// serverDown: the server said it shuts down, and no message came since.
	serverDown bool
}

func (d *drainer) run(ctx context.Context) error {
	lastMsg := time.Now()
	d.begun = lastMsg
	for ctx.Err() == nil {
		if d.reachedMaxRows() && d.w == nil {
			return nil
		}
		// The wait for messages keeps the lease of those held.
		d.renewIfDue()
		fetchAt := time.Now()
		msgs, err := d.c.Fetch(d.f.fetch, min(time.Second, d.ackWait/4))
		if len(d.pending) == 0 {
			d.leaseFrom = fetchAt
		}
		if err != nil && ctx.Err() == nil {
			d.fetchFailed(ctx, err)
			continue
		}
		if err := d.takeAll(ctx, msgs); err != nil {
			return err
		}
		if len(msgs) > 0 {
			lastMsg = time.Now()
			d.serverDown = false
		}
		if done, err := d.afterFetch(len(msgs) == 0, lastMsg); done || err != nil {
			return err
		}
	}
	return d.closeSegment()
}

// afterFetch closes the segment when the stream is idle or the segment is --segment-time
// old, and reports whether the drain is done: idle for --idle-exit since lastMsg.
func (d *drainer) afterFetch(idle bool, lastMsg time.Time) (done bool, err error) {
	if (d.w != nil || len(d.pending) > 0) && (idle || time.Since(d.started) >= d.f.segmentTime) {
		if err := d.closeSegment(); err != nil {
			return true, err
		}
	}
	return idle && d.f.idleExit > 0 && time.Since(lastMsg) >= d.f.idleExit, nil
}

// fetchFailed reports a fetch that failed; the drain tries again.
func (d *drainer) fetchFailed(ctx context.Context, err error) {
	if errors.Is(err, jetstream.ErrServerShutdown) {
		// A server stopped on purpose (sample run --publish embedded, once its stream is
		// drained; a broker restarted): not an error. The client reconnects if it comes
		// back.
		if !d.serverDown {
			fmt.Fprintf(d.stderr, "sample drain: the NATS server shut down; waiting for it to come back %s\n", d.until())
			d.serverDown = true
		}
		return
	}
	// A lost connection or a restarting server: the client reconnects; try again.
	fmt.Fprintf(d.stderr, "sample drain: %v (retrying)\n", oneLine(err.Error()))
	select {
	case <-ctx.Done():
	case <-time.After(250 * time.Millisecond):
	}
}

// takeAll takes the messages of one fetch, one by one.
func (d *drainer) takeAll(ctx context.Context, msgs []jetstream.Msg) error {
	for i, m := range msgs {
		d.unhandled = msgs[i+1:]
		if err := d.take(ctx, m); err != nil {
			return err
		}
	}
	d.unhandled = nil
	d.renewIfDue()
	return nil
}

// take writes m into the segment (a message delivered again is held, not written; one
// beyond --max-rows is given back to the server), and closes the segment once it is full.
// An error closes the segment too.
func (d *drainer) take(ctx context.Context, m jetstream.Msg) error {
	if d.reachedMaxRows() {
		// Not ours to take: the server hands it to the next drain at once.
		if err := m.Nak(); err != nil {
			return errors.Join(fmt.Errorf("give back a message: %w", err), d.closeSegment())
		}
		return nil
	}
	dup, err := d.committed(ctx, m)
	if err != nil {
		return errors.Join(err, d.closeSegment())
	}
	if dup {
		// Delivered again (a drain killed before it acknowledged, an acknowledgement lost
		// in a server restart): it is in a file already.
		d.sum.Duplicates++
		d.hold(m)
		return nil
	}
	if err := d.write(m); err != nil {
		return errors.Join(err, d.closeSegment())
	}
	d.pace(ctx)
	d.renewIfDue()
	if d.segRows >= d.f.segmentRows || d.reachedMaxRows() || len(d.segSeqs) >= scaleout.MaxClaimRanges {
		return d.closeSegment()
	}
	return nil
}

// reachedMaxRows reports whether --max-rows rows are taken.
func (d *drainer) reachedMaxRows() bool { return d.f.maxRows > 0 && d.taken() >= d.f.maxRows }

// taken is the rows taken so far: those of the committed files and of the segment being
// written.
func (d *drainer) taken() int64 { return d.sum.Rows + d.segRows }

// until says when a drain waiting for messages stops.
func (d *drainer) until() string {
	if d.f.idleExit > 0 {
		return fmt.Sprintf("(--idle-exit: the drain stops once nothing has come for %v)", d.f.idleExit)
	}
	return "(until interrupted)"
}

// pace sleeps, with --max-rate, until the rows taken so far are no more than the rate allows
// since the drain started.
func (d *drainer) pace(ctx context.Context) {
	if d.f.maxRate <= 0 {
		return
	}
	due := d.begun.Add(time.Duration(float64(d.taken()) / d.f.maxRate * float64(time.Second)))
	for wait := time.Until(due); wait > 0 && ctx.Err() == nil; wait = time.Until(due) {
		select {
		case <-ctx.Done():
		case <-time.After(min(wait, d.ackWait/4)):
		}
		d.renewIfDue() // the messages held stay this drain's while it waits
	}
}

// write adds one message's batch to the current segment, opening it first when needed.
func (d *drainer) write(m jetstream.Msg) error {
	b, meta, err := scaleout.Decode(&nats.Msg{Subject: m.Subject(), Data: m.Data(), Header: m.Headers()})
	if err != nil {
		// A message that is not a sample batch would come back forever: take it out of the
		// stream and say so.
		if e := m.Term(); e != nil {
			return errors.Join(err, e)
		}
		return fmt.Errorf("%w (message terminated)", err)
	}
	if d.w == nil {
		opts, err := d.f.output.Options(meta)
		if err != nil {
			return err
		}
		path := d.freeName()
		opts.Format = opts.Format.Resolve(path)
		opts.InPlace = true // the .partial name and the rename are the journal's (drainJournal)
		if d.w, err = output.NewWriter(path+partialSuffix, opts); err != nil {
			return err
		}
		d.segName = path
		d.started = time.Now()
		d.segRows, d.segMessages, d.segBatches, d.segEnvSteps = 0, 0, 0, 0
		d.segSeqs = d.segSeqs[:0]
	}
	rows := int64(b.Rows())
	if err := d.w.Write(b); err != nil {
		return err
	}
	md, err := m.Metadata()
	if err != nil {
		return err
	}
	d.segSeqs.Add(md.Sequence.Stream)
	d.hold(m)
	d.segRows += rows
	d.segMessages++
	d.segEnvSteps += int64(b.EnvSteps)
	if m.Headers().Get(scaleout.HeaderPart) == "" || isLastPart(m.Headers().Get(scaleout.HeaderPart)) {
		d.segBatches++
	}
	return nil
}

func isLastPart(p string) bool {
	var i, n int
	_, err := fmt.Sscanf(p, "%d/%d", &i, &n)
	return err == nil && i == n
}

// freeName is the first of out, out-000001, ... that does not exist yet (a restarted drain
// never overwrites the files of an earlier one).
func (d *drainer) freeName() string {
	for ; ; d.next++ {
		p := d.f.out
		if d.next > 0 {
			p = output.RotatedName(d.f.out, d.next)
		}
		_, err := os.Stat(p)
		_, errPartial := os.Stat(p + partialSuffix)
		if errors.Is(err, os.ErrNotExist) && errors.Is(errPartial, os.ErrNotExist) {
			d.next++
			return p
		}
	}
}

// closeSegment closes the current file (written, flushed, synced), commits it (see
// drainJournal) and then acknowledges its messages.
func (d *drainer) closeSegment() error {
	if d.w == nil && len(d.pending) == 0 {
		return nil
	}
	var token string
	if d.w != nil {
		// Every message of the segment stays this drain's for --ack-wait from here: long
		// enough to close, prepare and claim (see drainJournal).
		d.renew()
		err := d.w.Close()
		d.w = nil
		rows := d.segRows
		d.segRows = 0 // committed or not, no longer being written
		if err != nil {
			// Not committed, not acknowledged: the server delivers these messages again, and
			// a restarted drain removes the .partial file.
			return err
		}
		d.ids = d.ids[:0]
		for _, m := range d.pending {
			d.ids = append(d.ids, m.Headers().Get(scaleout.HeaderMsgID))
		}
		token = rand.Text()
		if err := d.journal.prepare(d.segName, token, d.ids); err != nil {
			return err
		}
		crashPoint("prepare")
		if err := d.claim(token); err != nil {
			return err
		}
		crashPoint("claim")
		if err := publishSegment(d.segName); err != nil {
			return fmt.Errorf("rename the committed segment %s into place: %w (a restarted drain finishes it)", d.segName, err)
		}
		crashPoint("rename")
		d.sum.Out = append(d.sum.Out, d.segName)
		d.sum.Rows += rows
		d.sum.Messages += d.segMessages
		d.sum.Batches += d.segBatches
		d.sum.EnvSteps += d.segEnvSteps
	}
	var err error
	// The acknowledgements may meet a restarting server that no longer knows these
	// deliveries: the messages are then delivered again and dropped by their ids.
	for try := 0; try < 3; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = scaleout.AckAll(ctx, d.pending)
		cancel()
		if err == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintf(d.stderr, "sample drain: %v; the server will deliver these %d messages again and they will be dropped by id\n", oneLine(err.Error()), len(d.pending))
	} else if token != "" {
		// Acknowledged: never delivered again. Kept when that is not sure (a restarted
		// drain releases it once its messages left the stream).
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := d.claims.Release(ctx, token); err != nil {
			fmt.Fprintf(d.stderr, "sample drain: %v (kept)\n", oneLine(err.Error()))
		}
		cancel()
	}
	d.pending = d.pending[:0]
	return nil
}

// idSet remembers the last n message ids.
type idSet struct {
	ids  map[string]struct{}
	ring []string
	next int
}

func newIDSet(n int) idSet { return idSet{ids: map[string]struct{}{}, ring: make([]string, n)} }

// add records id and reports whether it was there already ("" is never recorded).
func (s *idSet) add(id string) bool {
	if id == "" {
		return false
	}
	if _, ok := s.ids[id]; ok {
		return true
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.ids, old)
	}
	s.ring[s.next] = id
	s.next = (s.next + 1) % len(s.ring)
	s.ids[id] = struct{}{}
	return false
}
