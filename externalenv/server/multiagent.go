package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server/wire"
	"github.com/onnxrl/sampler/spaces"
)

// multiAgent is the episode endpoints over an ExternalMultiAgentEnv (see episodeAPI).
type multiAgent struct {
	s   *Server
	env *externalenv.ExternalMultiAgentEnv
}

// agentRef locates one agent's value in a request's flat buffer.
type agentRef struct {
	id       string
	off, end int
}

// decodeAgents reads an object of agent id -> value of space sp, appending the values to
// *flat and their places to b.refs, and fills m (cleared) with them. base is
// ErrBadObservation or ErrBadAction for values outside sp.
func decodeAgents(b *reqBuf, sp spaces.Space, flat *[]float32, m map[string][]float32, base error, what string, limit int) error {
	d := &b.dec
	refs := b.refs[:0]
	err := d.Object(func(key []byte) error {
		if len(key) > MaxAgentIDBytes {
			return badRequest("an agent id has %d bytes, at most %d allowed", len(key), MaxAgentIDBytes)
		}
		if len(refs) >= limit {
			return badRequest("more than %d agents in %s (the server's --max-agents)", limit, what)
		}
		off := len(*flat)
		var err error
		if *flat, err = d.Value(*flat, sp); err != nil {
			return err
		}
		refs = append(refs, agentRef{id: string(key), off: off, end: len(*flat)})
		return nil
	})
	b.refs = refs
	if err != nil {
		return err
	}
	clear(m)
	for _, r := range refs {
		if r.id == "" {
			return fmt.Errorf("%w: empty agent id", base)
		}
		if _, dup := m[r.id]; dup {
			return badRequest("agent %q appears twice in %s", r.id, what)
		}
		v := (*flat)[r.off:r.end:r.end]
		if err := checkValue(base, what+" of agent "+strconv.Quote(r.id), sp, v); err != nil {
			return err
		}
		m[r.id] = v
	}
	return nil
}

// decodeObsMA reads {"observation": {agent: obs}} (with the other members the caller handles)
// into b.obsMap.
func (s *Server) decodeObsMA(b *reqBuf, other func(key []byte) (bool, error)) error {
	if b.obsMap == nil {
		b.obsMap = map[string][]float32{}
	}
	b.obs = b.obs[:0]
	got := false
	err := member(&b.dec, func(key []byte) (bool, error) {
		if string(key) == "observation" {
			got = true
			return true, decodeAgents(b, s.obsSpace, &b.obs, b.obsMap, externalenv.ErrBadObservation, "observation", s.maxAgents)
		}
		if other != nil {
			return other(key)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if !got {
		return badRequest(`missing member "observation" (an object of agent id -> observation)`)
	}
	if len(b.obsMap) == 0 {
		return fmt.Errorf("%w: no agent observes", externalenv.ErrBadObservation)
	}
	return nil
}

// agentKey checks one agent id of a /returns object.
func (s *Server) agentKey(key []byte, seen int) error {
	if len(key) > MaxAgentIDBytes {
		return badRequest("an agent id has %d bytes, at most %d allowed", len(key), MaxAgentIDBytes)
	}
	if seen >= s.maxAgents {
		return badRequest("more than %d agents (the server's --max-agents)", s.maxAgents)
	}
	return nil
}

// action: POST /v1/episodes/{id}/action {"observation": {agent: obs}}
// -> 200 {"action": {agent: action}} for the agents that act (those not marked done).
func (a multiAgent) action(b *reqBuf, id string, r *http.Request, w http.ResponseWriter) (int, error) {
	s := a.s
	if err := s.decodeObsMA(b, nil); err != nil {
		return 0, err
	}
	acts, err := a.env.GetAction(r.Context(), id, b.obsMap)
	if err != nil {
		return 0, err
	}
	b.ids = b.ids[:0]
	for agent := range acts {
		b.ids = append(b.ids, agent)
	}
	slices.Sort(b.ids)
	b.out = append(b.out[:0], `{"action":{`...)
	for i, agent := range b.ids {
		if i > 0 {
			b.out = append(b.out, ',')
		}
		b.out = wire.AppendString(b.out, agent)
		b.out = append(b.out, ':')
		b.out = wire.AppendValue(b.out, s.actSpace, acts[agent])
	}
	b.out = append(b.out, "}}"...)
	clear(b.obsMap)
	return writeJSON(w, http.StatusOK, b.out), nil
}

// logAction: POST /v1/episodes/{id}/log_action {"observation": {agent: obs},
// "action": {agent: action}} -> 204.
func (a multiAgent) logAction(b *reqBuf, id string, w http.ResponseWriter) (int, error) {
	s := a.s
	if b.actMap == nil {
		b.actMap = map[string][]float32{}
	}
	b.act = b.act[:0]
	gotAct := false
	// The actions go to a buffer of their own, so the members may come in any order.
	err := s.decodeObsMA(b, func(key []byte) (bool, error) {
		if string(key) != "action" {
			return false, nil
		}
		gotAct = true
		return true, decodeAgents(b, s.actSpace, &b.act, b.actMap, externalenv.ErrBadAction, "action", s.maxAgents)
	})
	if err != nil {
		return 0, err
	}
	if !gotAct {
		return 0, badRequest(`missing member "action" (an object of agent id -> action)`)
	}
	if err := a.env.LogAction(id, b.obsMap, b.actMap); err != nil {
		return 0, err
	}
	clear(b.obsMap)
	clear(b.actMap)
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}

// returns: POST /v1/episodes/{id}/returns {"reward": {agent: r}, "done"?: {agent: bool},
// "info"?: {agent: {...}}} -> 204; "rewards" and "dones" (RLlib's names) are accepted too.
func (a multiAgent) returns(b *reqBuf, id string, w http.ResponseWriter) (int, error) {
	s := a.s
	d := &b.dec
	rewards := map[string]float64{}
	var dones map[string]bool
	var info env.Info
	got := false
	err := member(d, func(key []byte) (bool, error) {
		switch string(key) {
		case "reward", "rewards":
			got = true
			return true, d.Object(func(agent []byte) error {
				if err := s.agentKey(agent, len(rewards)); err != nil {
					return err
				}
				v, err := d.Float64()
				if err != nil {
					return err
				}
				if err := checkReward(v, agent); err != nil {
					return err
				}
				rewards[string(agent)] += v
				return nil
			})
		case "done", "dones":
			if dones == nil {
				dones = map[string]bool{}
			}
			return true, d.Object(func(agent []byte) error {
				if err := s.agentKey(agent, len(dones)); err != nil {
					return err
				}
				v, err := d.Bool()
				dones[string(agent)] = v
				return err
			})
		case "info", "infos":
			var err error
			info, err = decodeInfoMA(d)
			return true, err
		}
		return false, nil
	})
	if err != nil {
		return 0, err
	}
	if !got {
		return 0, badRequest(`missing member "reward" (an object of agent id -> reward)`)
	}
	if err := a.env.LogReturns(id, rewards, dones, info); err != nil {
		return 0, err
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}

// decodeInfoMA reads {agent: {...}} (or null): each agent's info must be an object or null.
func decodeInfoMA(d *wire.Decoder) (env.Info, error) {
	if d.Null() {
		return nil, nil
	}
	raw, err := d.Raw()
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, badRequest("info: %s", jsonProblem(err, "an object of agent id -> info object"))
	}
	info := env.Info{}
	for agent, v := range m {
		var one map[string]any
		if err := json.Unmarshal(v, &one); err != nil {
			return nil, badRequest("info of agent %q: %s", agent, jsonProblem(err, "an object"))
		}
		if one != nil {
			info[agent] = one
		}
	}
	return info, nil
}

// end: POST /v1/episodes/{id}/end {"observation": {agent: obs}, "truncated"?} -> 204.
func (a multiAgent) end(b *reqBuf, id string, w http.ResponseWriter) (int, error) {
	s := a.s
	truncated := false
	if err := s.decodeObsMA(b, func(key []byte) (bool, error) {
		return truncatedMember(&b.dec, key, &truncated)
	}); err != nil {
		return 0, err
	}
	end := a.env.EndEpisode
	if truncated {
		end = a.env.EndEpisodeTruncated
	}
	err := end(id, b.obsMap)
	clear(b.obsMap)
	if err != nil {
		return 0, err
	}
	s.ended()
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}
