package scaleout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RunConfig sizes a run's stream when EnsureRun creates it.
type RunConfig struct {
	// MaxBytes is the stream's byte limit: once it holds this much, publishes are refused
	// (back-pressure) until a consumer acknowledges messages. DefaultMaxBytes when 0.
	MaxBytes int64
	// Duplicates is the de-duplication window (DefaultDuplicates when 0).
	Duplicates time.Duration
}

// Defaults of RunConfig.
const (
	DefaultMaxBytes   = 1 << 30
	DefaultDuplicates = 2 * time.Minute
)

// EnsureRun creates run's stream, object store and key-value bucket where they do not exist
// yet; existing ones are left as they are (their limits included).
func EnsureRun(ctx context.Context, js jetstream.JetStream, run string, c RunConfig) error {
	if err := CheckName("run", run); err != nil {
		return err
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.Duplicates == 0 {
		c.Duplicates = DefaultDuplicates
	}
	if _, err := js.Stream(ctx, StreamName(run)); errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        StreamName(run),
			Description: "sample batches of run " + run + " (Arrow IPC)",
			Subjects:    []string{subjects(run)},
			Retention:   jetstream.WorkQueuePolicy,
			Storage:     jetstream.FileStorage,
			MaxBytes:    c.MaxBytes,
			Discard:     jetstream.DiscardNew,
			Duplicates:  c.Duplicates,
		})
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("scaleout: create stream %s: %w", StreamName(run), err)
		}
	} else if err != nil {
		return fmt.Errorf("scaleout: stream %s: %w", StreamName(run), err)
	}
	if _, err := js.ObjectStore(ctx, ModelBucket(run)); errors.Is(err, jetstream.ErrBucketNotFound) {
		if _, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: ModelBucket(run),
			Description: "ONNX policy versions of run " + run, Storage: jetstream.FileStorage}); err != nil &&
			!errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("scaleout: create object store %s: %w", ModelBucket(run), err)
		}
	} else if err != nil {
		return fmt.Errorf("scaleout: object store %s: %w", ModelBucket(run), err)
	}
	if _, err := js.KeyValue(ctx, PolicyBucket(run)); errors.Is(err, jetstream.ErrBucketNotFound) {
		if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: PolicyBucket(run),
			Description: "current policy versions of run " + run, History: 8, Storage: jetstream.FileStorage}); err != nil &&
			!errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("scaleout: create key-value bucket %s: %w", PolicyBucket(run), err)
		}
	} else if err != nil {
		return fmt.Errorf("scaleout: key-value bucket %s: %w", PolicyBucket(run), err)
	}
	if _, err := js.KeyValue(ctx, SamplerBucket(run)); errors.Is(err, jetstream.ErrBucketNotFound) {
		if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: SamplerBucket(run),
			Description: "samplers of run " + run, TTL: SamplerTTL, Storage: jetstream.FileStorage}); err != nil &&
			!errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("scaleout: create key-value bucket %s: %w", SamplerBucket(run), err)
		}
	} else if err != nil {
		return fmt.Errorf("scaleout: key-value bucket %s: %w", SamplerBucket(run), err)
	}
	return nil
}

// SamplerTTL is how long a sampler stays listed after its last report.
const SamplerTTL = 30 * time.Second
