package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/onnxrl/sampler/scaleout"
)

// The drain's side of the claims and its lease (see drainJournal): what makes two drains of
// one --durable, one of them killed between a commit and its acknowledgements, write every
// message once.

// openJournal opens the claims of the drain's durable and its journal, finishing or removing
// the segments a killed drain left, and releases the claims of its earlier segments whose
// messages have all left the stream.
func (d *drainer) openJournal(ctx context.Context, js jetstream.JetStream) error {
	var err error
	if d.claims, err = scaleout.OpenClaims(ctx, js, d.f.nats.run, d.f.durable); err != nil {
		return err
	}
	var owned []string
	if d.journal, owned, err = openDrainJournal(ctx, d.f.out, &d.seen, d.claims, d.stderr); err != nil {
		return err
	}
	if len(owned) == 0 {
		return nil
	}
	st, err := js.Stream(ctx, scaleout.StreamName(d.f.nats.run))
	if err != nil {
		return fmt.Errorf("stream %s: %w", scaleout.StreamName(d.f.nats.run), err)
	}
	_, err = d.claims.ReleaseGone(ctx, owned, st.CachedInfo().State.FirstSeq)
	return err
}

// committed reports whether m is in a committed file already: its id written or journaled by
// this drain, or, for a message delivered more than once, its stream sequence claimed by any
// drain of the durable (read from the server when not known yet).
func (d *drainer) committed(ctx context.Context, m jetstream.Msg) (bool, error) {
	if d.seen.add(m.Headers().Get(scaleout.HeaderMsgID)) {
		return true, nil
	}
	md, err := m.Metadata()
	if err != nil {
		return false, err
	}
	if md.NumDelivered < 2 {
		return false, nil
	}
	if d.claims.Claimed(md.Sequence.Stream) {
		return true, nil
	}
	// Not cancelled by a stop signal: the answer decides whether the message is written.
	lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.claims.Load(lctx); err != nil {
		return false, err
	}
	return d.claims.Claimed(md.Sequence.Stream), nil
}

// hold keeps m until its segment is committed (or m is dropped with it).
func (d *drainer) hold(m jetstream.Msg) { d.pending = append(d.pending, m) }

// renew restarts the server's --ack-wait clock of every message this drain has (held, or
// fetched and not handled yet: a +WPI each, then a round trip), and the lease runs from now
// on. Only while three quarters of the lease are left at most: a message whose clock may have
// run out may be with another drain already, and a renewal cannot take it back (the claim
// then refuses the segment). When the server cannot be told, the lease stays as it was.
func (d *drainer) renew() {
	if len(d.pending) == 0 && len(d.unhandled) == 0 {
		return
	}
	at := time.Now()
	if at.Sub(d.leaseFrom) >= d.ackWait*3/4 {
		return
	}
	for _, ms := range [][]jetstream.Msg{d.pending, d.unhandled} {
		for _, m := range ms {
			if err := m.InProgress(); err != nil {
				return
			}
		}
	}
	if err := d.flush(); err != nil {
		return
	}
	d.leaseFrom = at
}

// renewIfDue renews the lease once a quarter of --ack-wait has passed.
func (d *drainer) renewIfDue() {
	if time.Since(d.leaseFrom) >= d.ackWait/4 {
		d.renew()
	}
}

// claim commits the current segment under token (step 3 of drainJournal), only while three
// quarters of the lease are left at most: the server delivers none of its messages to another
// drain before the claim exists.
func (d *drainer) claim(token string) error {
	deadline := d.leaseFrom.Add(d.ackWait * 3 / 4)
	if !time.Now().Before(deadline) {
		return fmt.Errorf("segment %s not committed: its messages waited %v of --ack-wait %v, and the server may deliver them to another drain (they come again; the next drain into --out %s removes %s%s)",
			d.segName, time.Since(d.leaseFrom).Round(time.Millisecond), d.ackWait, d.f.out, d.segName, partialSuffix)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := d.claims.Commit(ctx, token, d.segSeqs); err != nil {
		return fmt.Errorf("commit segment %s: %w (the next drain into --out %s finishes or removes %s%s)", d.segName, err, d.f.out, d.segName, partialSuffix)
	}
	return nil
}
