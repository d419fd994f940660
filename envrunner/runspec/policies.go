package runspec

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// mapRule is one PolicyMap rule AGENT=ID: a glob over agent ids and the policy it selects.
type mapRule struct {
	glob string
	id   envrunner.PolicyID
}

// buildPolicies builds the run's policies: one (Model, or the env's bundled policy) as the
// default policy, or those given in Policies as ID=MODEL, with the agents mapped to them by
// PolicyMap rules AGENT=ID (globs, the first that matches wins). Every agent the environment
// can have must map to a policy. It returns the policies, the mapping (nil for one policy)
// and a description of the models for a summary.
func buildPolicies(s *Spec, info *EnvInfo) (map[envrunner.PolicyID]envrunner.PolicyConfig, func(env.AgentID, *envrunner.Episode) envrunner.PolicyID, string, error) {
	byID := map[envrunner.PolicyID]string{}
	switch {
	case len(s.Policies) == 0:
		if len(s.PolicyMap) > 0 {
			return nil, nil, "", specErrorf("--policy-map needs policies given with --policy ID=MODEL")
		}
		m := s.Model
		if m == "" {
			var ok bool
			if m, ok = DefaultModels[s.Env]; !ok {
				return nil, nil, "", specErrorf("no bundled policy for %s; pass --model PATH or --model random", s.Env)
			}
		}
		byID[envrunner.DefaultPolicyID] = m
	case s.Model != "":
		return nil, nil, "", specErrorf("give --model or --policy ID=MODEL, not both")
	default:
		for _, p := range s.Policies {
			id, m, ok := strings.Cut(p, "=")
			if !ok || id == "" || m == "" {
				return nil, nil, "", specErrorf("--policy %q: want ID=MODEL", p)
			}
			if _, dup := byID[id]; dup {
				return nil, nil, "", specErrorf("--policy %s given twice", id)
			}
			byID[id] = m
		}
	}
	var rules []mapRule
	for _, r := range s.PolicyMap {
		glob, id, ok := strings.Cut(r, "=")
		if !ok || glob == "" || id == "" {
			return nil, nil, "", specErrorf("--policy-map %q: want AGENT=ID (AGENT may be a glob such as 'agent_*')", r)
		}
		if _, err := path.Match(glob, ""); err != nil {
			return nil, nil, "", specErrorf("--policy-map %q: bad glob: %v", r, err)
		}
		if _, ok := byID[id]; !ok {
			return nil, nil, "", specErrorf("--policy-map %q: no policy %q (given: %s)", r, id, strings.Join(sortedIDs(byID), ", "))
		}
		rules = append(rules, mapRule{glob, id})
	}
	var mapping func(env.AgentID, *envrunner.Episode) envrunner.PolicyID
	if len(byID) > 1 {
		if len(rules) == 0 {
			return nil, nil, "", specErrorf("%d policies need --policy-map AGENT=ID rules", len(byID))
		}
		agents := info.Agents
		if agents == nil {
			agents = []env.AgentID{env.DefaultAgentID}
		}
		// Decide every agent now: a run never meets an agent without a policy.
		chosen := map[env.AgentID]envrunner.PolicyID{}
		for _, a := range agents {
			id, ok := matchPolicy(rules, a)
			if !ok {
				return nil, nil, "", specErrorf("agent %q matches no --policy-map rule (agents: %s)", a, strings.Join(agents, ", "))
			}
			chosen[a] = id
		}
		mapping = func(a env.AgentID, _ *envrunner.Episode) envrunner.PolicyID {
			if id, ok := chosen[a]; ok {
				return id
			}
			id, _ := matchPolicy(rules, a) // an agent PossibleAgents did not list
			return id
		}
	}
	open := s.OpenModel
	if open == nil {
		open = func(name string) (*models.Policy, error) { return OpenPolicy(name, s.MaxModelBytes) }
	}
	for _, m := range byID {
		if m != "random" {
			// Without the runtime no model loads: said once, not as one policy's error.
			if err := inference.Init(); err != nil {
				return nil, nil, "", err
			}
			break
		}
	}
	pols := map[envrunner.PolicyID]envrunner.PolicyConfig{}
	var desc []string
	for _, id := range sortedIDs(byID) {
		m := byID[id]
		pc, err := BindPolicy(PolicySpec{Model: m, ObservationSpace: info.Obs, ActionSpace: info.Act,
			Action: connectors.ActionConfig{Explore: s.Explore, NormalizeActions: s.NormalizeActions, ClipActions: s.ClipActions},
			Device: s.Device, Threads: s.Threads, Open: open})
		if err != nil {
			return nil, nil, "", fmt.Errorf("policy %s: %w", id, err)
		}
		pols[id] = pc
		desc = append(desc, id+"="+m)
	}
	if len(byID) == 1 && len(s.Policies) == 0 {
		return pols, nil, byID[envrunner.DefaultPolicyID], nil
	}
	return pols, mapping, strings.Join(desc, ","), nil
}

func matchPolicy(rules []mapRule, a env.AgentID) (envrunner.PolicyID, bool) {
	for _, r := range rules {
		if ok, _ := path.Match(r.glob, a); ok {
			return r.id, true
		}
	}
	return "", false
}

func sortedIDs(m map[envrunner.PolicyID]string) []envrunner.PolicyID {
	ids := make([]envrunner.PolicyID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func sortStrings(s []string) { sort.Strings(s) }
