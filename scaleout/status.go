package scaleout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go/jetstream"
)

// Status is a run's state on the server: the stream's depth, each consumer's lag, the current
// policy versions and the samplers with the versions they sample with.
type Status struct {
	Run       string           `json:"run"`
	Stream    string           `json:"stream"`
	Messages  uint64           `json:"messages"`
	Bytes     uint64           `json:"bytes"`
	MaxBytes  int64            `json:"max_bytes"`
	Consumers []ConsumerStatus `json:"consumers"`
	Policies  []PolicyVersion  `json:"policies"`
	Samplers  []SamplerState   `json:"samplers"`
}

// ConsumerStatus is one durable consumer's lag.
type ConsumerStatus struct {
	Name        string `json:"name"`
	Pending     uint64 `json:"pending"`     // messages not delivered yet
	AckPending  int    `json:"ack_pending"` // delivered, not acknowledged
	Redelivered int    `json:"redelivered"`
}

// RunStatus reads run's status.
func RunStatus(ctx context.Context, js jetstream.JetStream, run string) (*Status, error) {
	if err := CheckName("run", run); err != nil {
		return nil, err
	}
	s, err := js.Stream(ctx, StreamName(run))
	if err != nil {
		return nil, fmt.Errorf("scaleout: run %s: stream %s: %w", run, StreamName(run), err)
	}
	info := s.CachedInfo()
	st := &Status{Run: run, Stream: StreamName(run), Messages: info.State.Msgs, Bytes: info.State.Bytes,
		MaxBytes: info.Config.MaxBytes, Consumers: []ConsumerStatus{}, Policies: []PolicyVersion{}, Samplers: []SamplerState{}}
	cl := s.ListConsumers(ctx)
	for ci := range cl.Info() {
		st.Consumers = append(st.Consumers, ConsumerStatus{Name: ci.Name, Pending: ci.NumPending,
			AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered})
	}
	if err := cl.Err(); err != nil {
		return nil, fmt.Errorf("scaleout: consumers of %s: %w", StreamName(run), err)
	}
	if err := readBucket(ctx, js, PolicyBucket(run), func(v []byte) error {
		var pv PolicyVersion
		if err := json.Unmarshal(v, &pv); err != nil {
			return err
		}
		st.Policies = append(st.Policies, pv)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := readBucket(ctx, js, SamplerBucket(run), func(v []byte) error {
		var ss SamplerState
		if err := json.Unmarshal(v, &ss); err != nil {
			return err
		}
		st.Samplers = append(st.Samplers, ss)
		return nil
	}); err != nil {
		return nil, err
	}
	sort.Slice(st.Samplers, func(i, j int) bool { return st.Samplers[i].Sampler < st.Samplers[j].Sampler })
	sort.Slice(st.Policies, func(i, j int) bool { return st.Policies[i].Policy < st.Policies[j].Policy })
	return st, nil
}

// readBucket calls fn with the value of every key of bucket (none when it does not exist).
func readBucket(ctx context.Context, js jetstream.JetStream, bucket string, fn func([]byte) error) error {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("scaleout: bucket %s: %w", bucket, err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("scaleout: keys of %s: %w", bucket, err)
	}
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired or deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("scaleout: %s in %s: %w", k, bucket, err)
		}
		if err := fn(e.Value()); err != nil {
			return fmt.Errorf("scaleout: %s in %s: %w", k, bucket, err)
		}
	}
	return nil
}
