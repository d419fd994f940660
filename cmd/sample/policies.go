package main

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
)

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// mapRule is one --policy-map AGENT=ID: a glob over agent ids and the policy it selects.
type mapRule struct {
	glob string
	id   envrunner.PolicyID
}

// runPolicies builds sample run's policies: one (--model, or the env's bundled policy) as
// the default policy, or those given with --policy ID=MODEL, with the agents mapped to them by
// --policy-map AGENT=ID rules (globs, the first that matches wins). Every agent the
// environment can have must map to a policy. It returns the policies, the mapping (nil for one
// policy) and a description of the models for the summary.
func runPolicies(f *runFlags, info *envInfo) (map[envrunner.PolicyID]envrunner.PolicyConfig, func(env.AgentID, *envrunner.Episode) envrunner.PolicyID, string, error) {
	models := map[envrunner.PolicyID]string{}
	switch {
	case len(f.policies) == 0:
		if len(f.policyMap) > 0 {
			return nil, nil, "", usagef("--policy-map needs policies given with --policy ID=MODEL")
		}
		m := f.model
		if m == "" {
			var ok bool
			if m, ok = defaultModels[f.env]; !ok {
				return nil, nil, "", usagef("no bundled policy for %s; pass --model PATH or --model random", f.env)
			}
		}
		models[envrunner.DefaultPolicyID] = m
	case f.model != "":
		return nil, nil, "", usagef("give --model or --policy ID=MODEL, not both")
	default:
		for _, p := range f.policies {
			id, m, ok := strings.Cut(p, "=")
			if !ok || id == "" || m == "" {
				return nil, nil, "", usagef("--policy %q: want ID=MODEL", p)
			}
			if _, dup := models[id]; dup {
				return nil, nil, "", usagef("--policy %s given twice", id)
			}
			models[id] = m
		}
	}
	var rules []mapRule
	for _, r := range f.policyMap {
		glob, id, ok := strings.Cut(r, "=")
		if !ok || glob == "" || id == "" {
			return nil, nil, "", usagef("--policy-map %q: want AGENT=ID (AGENT may be a glob such as 'agent_*')", r)
		}
		if _, err := path.Match(glob, ""); err != nil {
			return nil, nil, "", usagef("--policy-map %q: bad glob: %v", r, err)
		}
		if _, ok := models[id]; !ok {
			return nil, nil, "", usagef("--policy-map %q: no policy %q (given: %s)", r, id, strings.Join(sortedIDs(models), ", "))
		}
		rules = append(rules, mapRule{glob, id})
	}
	var mapping func(env.AgentID, *envrunner.Episode) envrunner.PolicyID
	if len(models) > 1 {
		if len(rules) == 0 {
			return nil, nil, "", usagef("%d policies need --policy-map AGENT=ID rules", len(models))
		}
		agents := info.agents
		if agents == nil {
			agents = []env.AgentID{env.DefaultAgentID}
		}
		// Decide every agent now: a run never meets an agent without a policy.
		chosen := map[env.AgentID]envrunner.PolicyID{}
		for _, a := range agents {
			id, ok := matchPolicy(rules, a)
			if !ok {
				return nil, nil, "", usagef("agent %q matches no --policy-map rule (agents: %s)", a, strings.Join(agents, ", "))
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
	pols := map[envrunner.PolicyID]envrunner.PolicyConfig{}
	var desc []string
	for _, id := range sortedIDs(models) {
		pc := envrunner.PolicyConfig{ObservationSpace: info.obs, ActionSpace: info.act,
			Action: connectors.ActionConfig{Explore: f.explore, NormalizeActions: f.normalize, ClipActions: f.clip}}
		m := models[id]
		if m == "random" {
			pc.Random = true
		} else {
			if err := inference.Init(); err != nil {
				return nil, nil, "", err
			}
			p, err := loadPolicy(m, f.maxModel.limit())
			if err != nil {
				return nil, nil, "", fmt.Errorf("policy %s: %w", id, err)
			}
			pc.Policy = p
			pc.Session = inference.Options{Device: f.device, IntraOpThreads: f.threads, InterOpThreads: 1}
		}
		pols[id] = pc
		desc = append(desc, id+"="+m)
	}
	if len(models) == 1 && len(f.policies) == 0 {
		return pols, nil, models[envrunner.DefaultPolicyID], nil
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
