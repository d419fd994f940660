package scaleout

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestExternalServer runs the publisher, consumer, policy store and status against a
// nats-server in its own process, as a deployment runs one: NATS_SERVER_BIN, else the one `make
// nats-server` builds into build/bin from the module the embedded broker uses, else one on
// PATH.
func TestExternalServer(t *testing.T) {
	bin := externalServer()
	if bin == "" {
		t.Skip("no nats-server: run `make nats-server` (builds build/bin/nats-server) or set NATS_SERVER_BIN")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	var nc *nats.Conn
	for start := time.Now(); ; {
		if nc, err = Connect(url, ConnectOptions{}); err == nil {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%s did not start: %v", bin, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer nc.Close()
	t.Logf("server %s", nc.ConnectedServerVersion())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := EnsureRun(ctx, js, "t", RunConfig{MaxBytes: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	pv, err := PublishPolicy(ctx, js, "t", "p", []byte("model"))
	if err != nil || pv.Version != 1 {
		t.Fatalf("policy %+v, %v", pv, err)
	}
	if data, err := FetchModel(ctx, js, "t", pv); err != nil || string(data) != "model" {
		t.Fatalf("model %q, %v", data, err)
	}
	p, err := NewPublisher(ctx, nc, js, PublisherOptions{Run: "t", Sampler: "s0", QueueSize: 1, MaxPayload: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const batches, rows = 20, 200
	written := writeBatches(p, batches, rows)
	for p.Stats().Full == 0 { // the 64 KiB stream fills: back-pressure with this server too
		select {
		case err := <-written:
			t.Fatalf("publisher finished (%v) without meeting a full stream", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	c, err := NewConsumer(ctx, js, ConsumerOptions{Run: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for len(ids) < batches*rows && ctx.Err() == nil {
		got, _ := drainAll(t, c, 200*time.Millisecond)
		ids = append(ids, got...)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	checkIDs(t, ids, batches*rows)
	st, err := RunStatus(ctx, js, "t")
	if err != nil || st.Messages != 0 || len(st.Samplers) != 1 || len(st.Policies) != 1 {
		t.Fatalf("status %+v, %v", st, err)
	}
}

// externalServer finds the nats-server binary TestExternalServer starts, or "".
func externalServer() string {
	if b := os.Getenv("NATS_SERVER_BIN"); b != "" {
		return b
	}
	if b, err := filepath.Abs(filepath.Join("..", "build", "bin", "nats-server")); err == nil {
		if _, err := os.Stat(b); err == nil {
			return b
		}
	}
	if b, err := exec.LookPath("nats-server"); err == nil {
		return b
	}
	return ""
}
