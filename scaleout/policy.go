package scaleout

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PolicyVersion is the value of a policy's key in the policy bucket: which object holds the
// version's ONNX file and its digest.
type PolicyVersion struct {
	Policy  string    `json:"policy"`
	Version uint64    `json:"version"`
	Object  string    `json:"object"`
	SHA256  string    `json:"sha256"`
	Size    int       `json:"size"`
	Created time.Time `json:"created"`
}

// ErrNoPolicy is returned by CurrentPolicy for a policy that has no version yet.
var ErrNoPolicy = errors.New("scaleout: no version of this policy has been published")

// PublishPolicy stores model as the next version of policy (1 for the first) and makes it the
// current one. Concurrent publishers get different versions.
func PublishPolicy(ctx context.Context, js jetstream.JetStream, run, policy string, model []byte) (PolicyVersion, error) {
	if err := CheckName("policy", policy); err != nil {
		return PolicyVersion{}, err
	}
	kv, err := js.KeyValue(ctx, PolicyBucket(run))
	if err != nil {
		return PolicyVersion{}, fmt.Errorf("scaleout: key-value bucket %s: %w", PolicyBucket(run), err)
	}
	obs, err := js.ObjectStore(ctx, ModelBucket(run))
	if err != nil {
		return PolicyVersion{}, fmt.Errorf("scaleout: object store %s: %w", ModelBucket(run), err)
	}
	sum := sha256.Sum256(model)
	for {
		var rev, next uint64 = 0, 1
		e, err := kv.Get(ctx, policy)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return PolicyVersion{}, fmt.Errorf("scaleout: policy %s: %w", policy, err)
		default:
			var cur PolicyVersion
			if err := json.Unmarshal(e.Value(), &cur); err != nil {
				return PolicyVersion{}, fmt.Errorf("scaleout: policy %s: bad entry in %s: %w", policy, PolicyBucket(run), err)
			}
			rev, next = e.Revision(), cur.Version+1
		}
		pv := PolicyVersion{Policy: policy, Version: next, Object: ModelObject(policy, next),
			SHA256: hex.EncodeToString(sum[:]), Size: len(model), Created: time.Now().UTC()}
		if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: pv.Object}, bytes.NewReader(model)); err != nil {
			return PolicyVersion{}, fmt.Errorf("scaleout: upload %s: %w", pv.Object, err)
		}
		val, _ := json.Marshal(pv)
		if rev == 0 {
			_, err = kv.Create(ctx, policy, val)
		} else {
			_, err = kv.Update(ctx, policy, val, rev)
		}
		if err == nil {
			return pv, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongLastSequence(err) {
			return PolicyVersion{}, fmt.Errorf("scaleout: make %s current: %w", pv.Object, err)
		}
		// Another publisher took this version number: try the next.
	}
}

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// CurrentPolicy reads the current version of policy.
func CurrentPolicy(ctx context.Context, js jetstream.JetStream, run, policy string) (PolicyVersion, error) {
	kv, err := js.KeyValue(ctx, PolicyBucket(run))
	if err != nil {
		return PolicyVersion{}, fmt.Errorf("scaleout: key-value bucket %s: %w", PolicyBucket(run), err)
	}
	e, err := kv.Get(ctx, policy)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return PolicyVersion{}, fmt.Errorf("%w (policy %s, run %s)", ErrNoPolicy, policy, run)
	}
	if err != nil {
		return PolicyVersion{}, fmt.Errorf("scaleout: policy %s: %w", policy, err)
	}
	var pv PolicyVersion
	if err := json.Unmarshal(e.Value(), &pv); err != nil {
		return PolicyVersion{}, fmt.Errorf("scaleout: policy %s: bad entry in %s: %w", policy, PolicyBucket(run), err)
	}
	return pv, nil
}

// FetchModel downloads pv's ONNX file and checks its digest.
func FetchModel(ctx context.Context, js jetstream.JetStream, run string, pv PolicyVersion) ([]byte, error) {
	obs, err := js.ObjectStore(ctx, ModelBucket(run))
	if err != nil {
		return nil, fmt.Errorf("scaleout: object store %s: %w", ModelBucket(run), err)
	}
	data, err := obs.GetBytes(ctx, pv.Object)
	if err != nil {
		return nil, fmt.Errorf("scaleout: download %s: %w", pv.Object, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != pv.SHA256 {
		return nil, fmt.Errorf("scaleout: %s has sha256 %s, the policy bucket says %s", pv.Object, got, pv.SHA256)
	}
	return data, nil
}
