package scaleout

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
	"github.com/onnxrl/sampler/spaces"
)

// record builds m's Arrow record (with metadata meta), released when the test ends.
func record(tb testing.TB, m *envrunner.MultiAgentBatch, meta map[string]string) arrow.RecordBatch {
	tb.Helper()
	var bd arrowbatch.Builder
	rec, ok, err := bd.Build(m, meta)
	if err != nil || !ok {
		tb.Fatal(ok, err)
	}
	tb.Cleanup(rec.Release)
	return rec
}

// testBatch returns a CartPole-shaped batch of n rows whose eps_id are first, first+1, ...
// (one row per episode, so every row is told apart by its eps_id) and one env step per row.
func testBatch(first int64, n int) *envrunner.MultiAgentBatch {
	b := &envrunner.SampleBatch{Count: n, ObsWidth: 4, ActionWidth: 1, ActionSpace: &spaces.Discrete{N: 2}}
	for i := range n {
		id := first + int64(i)
		for k := range 4 {
			b.Obs = append(b.Obs, float32(id)+float32(k)/8)
			b.NewObs = append(b.NewObs, float32(id)-float32(k)/8)
		}
		b.Actions = append(b.Actions, float32(id%2))
		b.Rewards = append(b.Rewards, 1)
		b.Terminateds = append(b.Terminateds, true)
		b.Truncateds = append(b.Truncateds, false)
		b.EpsID = append(b.EpsID, id)
		b.EnvID = append(b.EnvID, int32(i%8))
		b.AgentIndex = append(b.AgentIndex, 0)
		b.T = append(b.T, 0)
	}
	return &envrunner.MultiAgentBatch{EnvSteps: n, AgentSteps: n,
		PolicyBatches: map[envrunner.PolicyID]*envrunner.SampleBatch{envrunner.DefaultPolicyID: b}}
}

// startRun starts a broker on a temporary store with run "t" and returns an in-process
// connection to it.
func startRun(t *testing.T, rc RunConfig) (*Broker, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	b, err := StartBroker(BrokerOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	nc, err := b.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := EnsureRun(ctx, js, "t", rc); err != nil {
		t.Fatal(err)
	}
	return b, nc, js
}

// drainAll fetches and decodes messages until none came for idle, acknowledging each, and
// returns the eps_ids of every row and the sum of the env steps.
func drainAll(t *testing.T, c *Consumer, idle time.Duration) (ids []int64, envSteps int) {
	t.Helper()
	for {
		msgs, err := c.Fetch(64, idle)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return ids, envSteps
		}
		for _, m := range msgs {
			nm := &nats.Msg{Subject: m.Subject(), Data: m.Data(), Header: m.Headers()}
			mb, _, err := Decode(nm)
			if err != nil {
				t.Fatal(err)
			}
			envSteps += mb.EnvSteps
			b := mb.Policy(envrunner.DefaultPolicyID)
			for i, id := range b.EpsID {
				if b.Obs[4*i] != float32(id) || b.Actions[i] != float32(id%2) {
					t.Fatalf("row of eps_id %d has obs[0] %v action %v", id, b.Obs[4*i], b.Actions[i])
				}
			}
			ids = append(ids, b.EpsID...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := AckAll(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
}

// checkIDs fails unless ids holds 0..n-1 exactly once each.
func checkIDs(t *testing.T, ids []int64, n int) {
	t.Helper()
	seen := make([]int, n)
	lost, dup := 0, 0
	for _, id := range ids {
		if id < 0 || id >= int64(n) {
			t.Fatalf("unexpected eps_id %d", id)
		}
		seen[id]++
	}
	for _, s := range seen {
		if s == 0 {
			lost++
		}
		if s > 1 {
			dup += s - 1
		}
	}
	if lost != 0 || dup != 0 {
		t.Fatalf("%d rows: %d lost, %d duplicated", len(ids), lost, dup)
	}
}

// writeBatches writes n test batches of rows rows through p on a goroutine of its own, then
// closes p; the channel gets the first error, or Close's.
func writeBatches(p *Publisher, n, rows int) <-chan error {
	written := make(chan error, 1)
	go func() {
		for i := range n {
			if err := p.Write(testBatch(int64(i*rows), rows)); err != nil {
				written <- err
				return
			}
		}
		written <- p.Close()
	}()
	return written
}
