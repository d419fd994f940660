package scaleout

import (
	"fmt"
	"regexp"
)

// Header names of the sample messages.
const (
	HeaderMsgID         = "Nats-Msg-Id"
	HeaderPolicyVersion = "Rl-Policy-Version"
	HeaderEnvSteps      = "Rl-Env-Steps"
	HeaderCreated       = "Rl-Created"
	HeaderSampler       = "Rl-Sampler"
	HeaderBatch         = "Rl-Batch"
	HeaderPart          = "Rl-Part"
)

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckName reports whether s can be a run, sampler or policy name: 1 to 64 letters, digits,
// '-' or '_' (a NATS subject token and a stream, bucket and object name).
func CheckName(kind, s string) error {
	if !tokenRE.MatchString(s) {
		return fmt.Errorf("scaleout: %s name %q: want 1 to 64 letters, digits, '-' or '_'", kind, s)
	}
	return nil
}

// StreamName is the name of run's sample stream.
func StreamName(run string) string { return "RL_" + run + "_SAMPLES" }

// Subject is the subject on which sampler publishes run's samples.
func Subject(run, sampler string) string { return "rl." + run + ".samples." + sampler }

// subjects is the wildcard of all of run's sample subjects.
func subjects(run string) string { return "rl." + run + ".samples.*" }

// ModelBucket is the object store that holds run's ONNX files.
func ModelBucket(run string) string { return "rl_" + run + "_models" }

// PolicyBucket is the key-value bucket that names the current version of each of run's
// policies.
func PolicyBucket(run string) string { return "rl_" + run + "_policy" }

// ModelObject is the object name of a policy version's ONNX file.
func ModelObject(policy string, version uint64) string {
	return fmt.Sprintf("%s/v%06d.onnx", policy, version)
}

// SamplerBucket is the key-value bucket in which run's samplers report themselves (key: the
// sampler's name); entries expire after SamplerTTL without an update.
func SamplerBucket(run string) string { return "rl_" + run + "_samplers" }
