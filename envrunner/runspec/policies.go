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
	byID, err := policyModels(s)
	if err != nil {
		return nil, nil, "", err
	}
	rules, err := mapRules(s.PolicyMap, byID)
	if err != nil {
		return nil, nil, "", err
	}
	var mapping func(env.AgentID, *envrunner.Episode) envrunner.PolicyID
	if len(byID) > 1 {
		if mapping, err = policyMapping(rules, byID, info); err != nil {
			return nil, nil, "", err
		}
	}
	pols, desc, err := bindPolicies(s, info, byID)
	if err != nil {
		return nil, nil, "", err
	}
	if len(byID) == 1 && len(s.Policies) == 0 {
		return pols, nil, byID[envrunner.DefaultPolicyID], nil
	}
	return pols, mapping, desc, nil
}

// policyModels is the model of each policy id: Model (or the env's bundled policy) as the
// default policy, or Policies' ID=MODEL pairs.
func policyModels(s *Spec) (map[envrunner.PolicyID]string, error) {
	byID := map[envrunner.PolicyID]string{}
	switch {
	case len(s.Policies) == 0:
		if len(s.PolicyMap) > 0 {
			return nil, specErrorf("--policy-map needs policies given with --policy ID=MODEL")
		}
		m := s.Model
		if m == "" {
			var ok bool
			if m, ok = DefaultModels[s.Env]; !ok {
				return nil, specErrorf("no bundled policy for %s; pass --model PATH or --model random", s.Env)
			}
		}
		byID[envrunner.DefaultPolicyID] = m
	case s.Model != "":
		return nil, specErrorf("give --model or --policy ID=MODEL, not both")
	default:
		for _, p := range s.Policies {
			id, m, ok := strings.Cut(p, "=")
			if !ok || id == "" || m == "" {
				return nil, specErrorf("--policy %q: want ID=MODEL", p)
			}
			if _, dup := byID[id]; dup {
				return nil, specErrorf("--policy %s given twice", id)
			}
			byID[id] = m
		}
	}
	return byID, nil
}

// mapRules reads the AGENT=ID rules, each naming a policy of byID.
func mapRules(policyMap []string, byID map[envrunner.PolicyID]string) ([]mapRule, error) {
	var rules []mapRule
	for _, r := range policyMap {
		glob, id, ok := strings.Cut(r, "=")
		if !ok || glob == "" || id == "" {
			return nil, specErrorf("--policy-map %q: want AGENT=ID (AGENT may be a glob such as 'agent_*')", r)
		}
		if _, err := path.Match(glob, ""); err != nil {
			return nil, specErrorf("--policy-map %q: bad glob: %v", r, err)
		}
		if _, ok := byID[id]; !ok {
			return nil, specErrorf("--policy-map %q: no policy %q (given: %s)", r, id, strings.Join(sortedIDs(byID), ", "))
		}
		rules = append(rules, mapRule{glob, id})
	}
	return rules, nil
}

// policyMapping maps the agents to the policies by the rules, deciding every agent the
// environment can have now: a run never meets an agent without a policy.
func policyMapping(rules []mapRule, byID map[envrunner.PolicyID]string, info *EnvInfo) (func(env.AgentID, *envrunner.Episode) envrunner.PolicyID, error) {
	if len(rules) == 0 {
		return nil, specErrorf("%d policies need --policy-map AGENT=ID rules", len(byID))
	}
	agents := info.Agents
	if agents == nil {
		agents = []env.AgentID{env.DefaultAgentID}
	}
	chosen := map[env.AgentID]envrunner.PolicyID{}
	for _, a := range agents {
		id, ok := matchPolicy(rules, a)
		if !ok {
			return nil, specErrorf("agent %q matches no --policy-map rule (agents: %s)", a, strings.Join(agents, ", "))
		}
		chosen[a] = id
	}
	return func(a env.AgentID, _ *envrunner.Episode) envrunner.PolicyID {
		if id, ok := chosen[a]; ok {
			return id
		}
		id, _ := matchPolicy(rules, a) // an agent PossibleAgents did not list
		return id
	}, nil
}

// bindPolicies loads and binds the model of each policy id to the env's spaces and the
// spec's action and session settings; desc is "ID=MODEL,..." for a summary.
func bindPolicies(s *Spec, info *EnvInfo, byID map[envrunner.PolicyID]string) (_ map[envrunner.PolicyID]envrunner.PolicyConfig, desc string, _ error) {
	open := s.OpenModel
	if open == nil {
		open = func(name string) (*models.Policy, error) { return OpenPolicy(name, s.MaxModelBytes) }
	}
	for _, m := range byID {
		if m != "random" {
			// Without the runtime no model loads: said once, not as one policy's error.
			if err := inference.Init(); err != nil {
				return nil, "", err
			}
			break
		}
	}
	pols := map[envrunner.PolicyID]envrunner.PolicyConfig{}
	var descs []string
	for _, id := range sortedIDs(byID) {
		m := byID[id]
		pc, err := BindPolicy(PolicySpec{Model: m, ObservationSpace: info.Obs, ActionSpace: info.Act,
			Action: connectors.ActionConfig{Explore: s.Explore, NormalizeActions: s.NormalizeActions, ClipActions: s.ClipActions},
			Device: s.Device, Threads: s.Threads, Open: open})
		if err != nil {
			return nil, "", fmt.Errorf("policy %s: %w", id, err)
		}
		pols[id] = pc
		descs = append(descs, id+"="+m)
	}
	return pols, strings.Join(descs, ","), nil
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
