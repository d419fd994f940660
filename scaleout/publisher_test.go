package scaleout

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onnxrl/sampler/envrunner"
)

func TestPublishConsume(t *testing.T) {
	_, nc, js := startRun(t, RunConfig{})
	var back atomic.Int64
	acked := map[string]int{} // the publishing goroutine's, read after Close
	p, err := NewPublisher(context.Background(), nc, js, PublisherOptions{Run: "t", Sampler: "s0",
		MaxPayload: 16 << 10, Metadata: map[string]string{"k": "v"},
		OnPublished: func(*envrunner.MultiAgentBatch) { back.Add(1) },
		OnAcked:     func(id string, rows int) { acked[id] += rows }})
	if err != nil {
		t.Fatal(err)
	}
	const batches, rows = 6, 500
	for i := range batches {
		p.SetPolicyVersion(uint64(i))
		if err := p.Write(testBatch(int64(i*rows), rows)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if back.Load() != batches || st.Batches != batches || st.Rows != batches*rows {
		t.Fatalf("returned %d, stats %+v", back.Load(), st)
	}
	if st.Messages <= batches {
		t.Fatalf("a 500-row batch should not fit in 16 KiB: %d messages", st.Messages)
	}
	ackedRows := 0
	for _, r := range acked {
		ackedRows += r
	}
	if int64(len(acked)) != st.Messages || ackedRows != batches*rows || acked["s0-1"] == 0 {
		t.Fatalf("OnAcked told %d messages of %d rows (%v), want %d of %d", len(acked), ackedRows, acked, st.Messages, batches*rows)
	}
	c, err := NewConsumer(context.Background(), js, ConsumerOptions{Run: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Check the headers of the first message.
	msgs, err := c.Fetch(1, time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("fetch: %v, %d messages", err, len(msgs))
	}
	h := msgs[0].Headers()
	if h.Get(HeaderMsgID) != "s0-1" || h.Get(HeaderPolicyVersion) != "0" || !strings.HasPrefix(h.Get(HeaderPart), "1/") || h.Get(HeaderCreated) == "" {
		t.Fatalf("headers %v", h)
	}
	if err := msgs[0].Nak(); err != nil {
		t.Fatal(err)
	}
	ids, steps := drainAll(t, c, 500*time.Millisecond)
	checkIDs(t, ids, batches*rows)
	if steps != batches*rows {
		t.Fatalf("env steps %d, want %d", steps, batches*rows)
	}
}

func TestPublishDuplicateIDs(t *testing.T) {
	_, nc, js := startRun(t, RunConfig{})
	for range 2 { // a restarted sampler with the same name and sequence: the server drops the copies
		p, err := NewPublisher(context.Background(), nc, js, PublisherOptions{Run: "t", Sampler: "s0"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := p.Write(testBatch(int64(i*10), 10)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewConsumer(context.Background(), js, ConsumerOptions{Run: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := drainAll(t, c, 300*time.Millisecond)
	checkIDs(t, ids, 30)
}

func TestBackPressure(t *testing.T) {
	// A stream of 64 KiB takes a few messages of about 10 KiB; the publisher must wait for
	// the consumer, and nothing may be lost.
	_, nc, js := startRun(t, RunConfig{MaxBytes: 64 << 10})
	p, err := NewPublisher(context.Background(), nc, js, PublisherOptions{Run: "t", Sampler: "s0", QueueSize: 1, MaxPayload: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const batches, rows = 40, 200
	written := writeBatches(p, batches, rows)
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Full == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no publish was refused by the full stream: %+v", p.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-written:
		t.Fatalf("the publisher finished (%v) while the stream was full", err)
	default:
	}
	c, err := NewConsumer(context.Background(), js, ConsumerOptions{Run: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for len(ids) < batches*rows {
		got, _ := drainAll(t, c, 200*time.Millisecond)
		ids = append(ids, got...)
		if time.Now().After(deadline.Add(10 * time.Second)) {
			break
		}
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	checkIDs(t, ids, batches*rows)
	t.Logf("stats %+v", p.Stats())
}
