package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/scaleout"
)

// TestTwoDrainsKilledMidCommitExactlyOnce: drain A (one --out, one machine) is SIGKILLed at
// a step of its commit; the server delivers its unacknowledged messages again, after
// --ack-wait, to drain B of the same --durable writing into another directory (another
// machine), which has never seen A's journal; A is then restarted into its own --out. Every
// row is in the two sets of files exactly once: B drops the messages A committed (their ids
// are in A's claim on the server) and writes those A had not committed; the restarted A
// finishes a committed rename and removes an uncommitted file. Before the claims, B wrote A's
// committed messages a second time ("prepare" aside, where A had committed nothing).
func TestTwoDrainsKilledMidCommitExactlyOnce(t *testing.T) {
	for _, step := range []string{"prepare", "claim", "rename"} {
		t.Run(step, func(t *testing.T) {
			b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
			require.NoError(t, err)
			defer b.Close()
			const steps = 2000
			s := runJSON(t, "--model", "random", "--num-envs", "4", "--steps", fmt.Sprint(steps),
				"--fragment-length", "50", "--publish", b.URL(), "--run", "k2", "--sampler", "w")
			require.EqualValues(t, steps, s.Rows)

			dirA, dirB := t.TempDir(), t.TempDir()
			outA, outB := filepath.Join(dirA, "a.parquet"), filepath.Join(dirB, "b.parquet")
			common := []string{"--server", b.URL(), "--run", "k2", "--segment-rows", "600",
				"--segment-time", "200ms", "--ack-wait", "1s"}
			cmd := exec.Command(os.Args[0], append(append([]string{"drain"}, common...), "--out", outA, "--idle-exit", "3s")...)
			cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1", "SAMPLE_DRAIN_CRASH="+step)
			var first bytes.Buffer
			cmd.Stdout, cmd.Stderr = &first, &first
			err = cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "drain A should have been killed: %s", first.String())
			require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())

			// B waits for the redelivery (--ack-wait 1s after A's fetch) and takes everything.
			dB := drainJSON(t, append(common, "--out", outB, "--idle-exit", "2s")...)
			// A, restarted, finds the stream empty and finishes or removes its segment.
			code, stdout, errs := runCLI(append(append([]string{"drain", "--json"}, common...), "--out", outA, "--idle-exit", "300ms")...)
			require.Equal(t, 0, code, errs)
			var dA drainSummary
			require.NoError(t, jsonUnmarshal(stdout, &dA), stdout)
			require.Zero(t, dA.Rows, "the stream was empty for the restarted A")

			files := globFiles(t, filepath.Join(dirA, "a*.parquet"), filepath.Join(dirB, "b*.parquet"))
			partials := globFiles(t, filepath.Join(dirA, "*"+partialSuffix), filepath.Join(dirB, "*"+partialSuffix))
			require.Empty(t, partials)
			require.EqualValues(t, steps, readRowsOnce(t, files), "every row once across %v", files)
			switch step {
			case "prepare":
				require.Zero(t, dB.Duplicates, "A committed nothing: B writes all of it")
				require.Contains(t, errs, "removed")
			default:
				require.Positive(t, dB.Duplicates, "B drops the messages A committed")
			}
			if step == "claim" {
				require.Contains(t, errs, "was committed by a drain that stopped before renaming it")
			}
			// Every claim is released: B's once acknowledged, A's by the restarted A once B
			// dropped its messages (they left the stream).
			js := connectJS(t, b.URL())
			kv, err := js.KeyValue(context.Background(), scaleout.ClaimBucket("k2"))
			require.NoError(t, err)
			keys, err := kv.ListKeys(context.Background())
			require.NoError(t, err)
			var left []string
			for k := range keys.Keys() {
				left = append(left, k)
			}
			require.Empty(t, left, "claims left")
			t.Logf("%s: %d files; B wrote %d messages and dropped %d as committed by A", step, len(files), dB.Messages, dB.Duplicates)
		})
	}
}

// globFiles returns the files matching any of the patterns.
func globFiles(t *testing.T, patterns ...string) []string {
	t.Helper()
	var out []string
	for _, p := range patterns {
		m, err := filepath.Glob(p)
		require.NoError(t, err)
		out = append(out, m...)
	}
	return out
}

// TestDrainLeaseRefusesLateCommit: a segment whose messages this drain has held for three
// quarters of --ack-wait or more without renewing them is not committed (the server may have
// delivered them to another drain), and such a lease is not renewed either.
func TestDrainLeaseRefusesLateCommit(t *testing.T) {
	d := &drainer{f: &drainFlags{out: "x.parquet"}, segName: "x.parquet", ackWait: time.Second,
		leaseFrom: time.Now().Add(-800 * time.Millisecond), flush: func() error { return nil }}
	err := d.claim("tok")
	require.ErrorContains(t, err, "segment x.parquet not committed")
	d.pending = make([]jetstream.Msg, 1) // not touched: the lease is past renewing
	before := d.leaseFrom
	d.renew()
	require.Equal(t, before, d.leaseFrom)
}
