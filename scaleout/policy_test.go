package scaleout

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestPublishPolicy(t *testing.T) {
	_, _, js := startRun(t, RunConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := CurrentPolicy(ctx, js, "t", "default_policy"); !errors.Is(err, ErrNoPolicy) {
		t.Fatalf("before any version: %v", err)
	}
	// Concurrent publishers get distinct versions 1..4.
	var wg sync.WaitGroup
	got := make([]PolicyVersion, 4)
	for i := range got {
		wg.Go(func() {
			pv, err := PublishPolicy(ctx, js, "t", "default_policy", []byte{byte(i), 1, 2, 3})
			if err != nil {
				t.Error(err)
			}
			got[i] = pv
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, pv := range got {
		seen[pv.Version] = true
	}
	if len(seen) != 4 || !seen[1] || !seen[4] {
		t.Fatalf("versions %v", got)
	}
	cur, err := CurrentPolicy(ctx, js, "t", "default_policy")
	if err != nil || cur.Version != 4 || cur.Object != "default_policy/v000004.onnx" {
		t.Fatalf("current %+v, %v", cur, err)
	}
	data, err := FetchModel(ctx, js, "t", cur)
	if err != nil || len(data) != 4 || data[1] != 1 {
		t.Fatalf("model %v, %v", data, err)
	}
	cur.SHA256 = "00" + cur.SHA256[2:]
	if _, err := FetchModel(ctx, js, "t", cur); err == nil {
		t.Fatal("a wrong digest was accepted")
	}
	if _, err := PublishPolicy(ctx, js, "t", "bad/name", nil); err == nil {
		t.Fatal("bad policy name accepted")
	}
}

func TestRunStatus(t *testing.T) {
	_, nc, js := startRun(t, RunConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := PublishPolicy(ctx, js, "t", "p", []byte("m")); err != nil {
		t.Fatal(err)
	}
	p, err := NewPublisher(ctx, nc, js, PublisherOptions{Run: "t", Sampler: "s0"})
	if err != nil {
		t.Fatal(err)
	}
	p.SetPolicyVersion(1)
	for i := range 3 {
		if err := p.Write(testBatch(int64(i*10), 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := NewConsumer(ctx, js, ConsumerOptions{Run: "t"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Fetch(1, time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatal(err)
	}
	st, err := RunStatus(ctx, js, "t")
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != 3 || len(st.Consumers) != 1 || st.Consumers[0].Pending != 2 || st.Consumers[0].AckPending != 1 {
		t.Fatalf("status %+v", st)
	}
	if len(st.Policies) != 1 || st.Policies[0].Version != 1 {
		t.Fatalf("policies %+v", st.Policies)
	}
	if len(st.Samplers) != 1 || st.Samplers[0].Sampler != "s0" || st.Samplers[0].PolicyVersion != 1 || st.Samplers[0].Stats.Batches != 3 {
		t.Fatalf("samplers %+v", st.Samplers)
	}
	if _, err := RunStatus(ctx, js, "missing"); err == nil {
		t.Fatal("status of a run without a stream")
	}
}
