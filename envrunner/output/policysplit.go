package output

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
)

// PolicyPath returns the name of the Parquet file set of a policy whose columns differ from
// those of the file at path: x.parquet gives x-<policy>.parquet (rotated into
// x-<policy>-000001.parquet, ...). Characters of the policy id other than ASCII letters,
// digits, '_' and '-' become '_'; an id that would look like a rotation counter (only digits),
// or is empty, gets the prefix "policy_".
func PolicyPath(path, policy string) string {
	ext := filepath.Ext(path)
	name := []byte(policy)
	digits := true
	for i, c := range name {
		switch {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
			digits = false
		default:
			name[i] = '_'
			digits = false
		}
	}
	id := string(name)
	if digits {
		id = "policy_" + id
	}
	return strings.TrimSuffix(path, ext) + "-" + id + ext
}

// part is the rows of a batch that go to one file set: the main one (policy "") or a
// policy's own.
type part struct {
	policy string
	batch  *envrunner.MultiAgentBatch
}

// splitter divides batches by layout for Parquet. A policy is placed when it first has rows:
// in the main file set when its columns are those of the first policy ever placed (the first
// of the first batch, in sorted order of the ids), in a file set of its own otherwise; it stays
// there. Each batch then gives one row group to the main set (its policies together) and one
// to each own set. The batches it returns are reused by the next split.
type splitter struct {
	layout arrowbatch.Layout
	placed map[string]bool // policy -> in a set of its own
	main   envrunner.MultiAgentBatch
	own    map[string]*envrunner.MultiAgentBatch
	ids    []string
	parts  []part
}

func (s *splitter) split(m *envrunner.MultiAgentBatch) []part {
	s.ids = s.ids[:0]
	for id, b := range m.PolicyBatches {
		if b != nil && b.Count > 0 {
			s.ids = append(s.ids, id)
		}
	}
	slices.Sort(s.ids)
	together := true
	for _, id := range s.ids {
		own, ok := s.placed[id]
		if !ok {
			l := arrowbatch.BatchLayout(m.PolicyBatches[id])
			if s.placed == nil {
				s.placed = map[string]bool{}
				s.layout = l
				s.layout.StateWidths = slices.Clone(l.StateWidths)
			}
			own = !l.Equal(s.layout)
			s.placed[id] = own
		}
		together = together && !own
	}
	s.parts = s.parts[:0]
	if together {
		return append(s.parts, part{batch: m})
	}
	if s.main.PolicyBatches == nil {
		s.main.PolicyBatches = map[string]*envrunner.SampleBatch{}
		s.own = map[string]*envrunner.MultiAgentBatch{}
	}
	clear(s.main.PolicyBatches)
	s.parts = append(s.parts, part{batch: &s.main}) // dropped below when empty
	s.main.EnvSteps, s.main.AgentSteps = m.EnvSteps, 0
	for _, id := range s.ids {
		b := m.PolicyBatches[id]
		if !s.placed[id] {
			s.main.PolicyBatches[id] = b
			s.main.AgentSteps += b.Count
			continue
		}
		o := s.own[id]
		if o == nil {
			o = &envrunner.MultiAgentBatch{PolicyBatches: map[string]*envrunner.SampleBatch{}}
			s.own[id] = o
		}
		clear(o.PolicyBatches)
		o.PolicyBatches[id] = b
		o.EnvSteps, o.AgentSteps = m.EnvSteps, b.Count
		s.parts = append(s.parts, part{policy: id, batch: o})
	}
	if s.main.AgentSteps == 0 {
		return s.parts[1:]
	}
	return s.parts
}
