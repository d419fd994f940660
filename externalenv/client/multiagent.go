package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// MultiAgent is the client of a multi-agent server (`sample serve --multi-agent`): the calls
// of externalenv.ExternalMultiAgentEnv, with observations, actions, rewards and dones keyed by
// agent id. Get it from Client.MultiAgent; it shares the client's connections.
type MultiAgent struct {
	c *Client
}

// MultiAgent returns the multi-agent calls of c.
func (c *Client) MultiAgent() *MultiAgent { return &MultiAgent{c: c} }

// StartEpisode starts an episode (see Client.StartEpisode).
func (m *MultiAgent) StartEpisode(ctx context.Context, id string, trainingEnabled bool) (string, error) {
	return m.c.StartEpisode(ctx, id, trainingEnabled)
}

// GetAction reports the observations of the agents that must act and returns their actions
// (agents marked done report their final observation and get none). The map is new.
func (m *MultiAgent) GetAction(ctx context.Context, id string, obs map[string][]float32) (map[string][]float32, error) {
	c := m.c
	sp, err := c.Spaces(ctx)
	if err != nil {
		return nil, err
	}
	acts := map[string][]float32{}
	err = c.send(ctx, id, "action", agents(obs), nil, false, func(d *wire.Decoder) error {
		return d.Object(func(agent []byte) error {
			a, err := d.Value(nil, sp.Action)
			if err == nil && len(a) != sp.Action.Size() {
				err = fmt.Errorf("action of agent %q with %d values, want %d", agent, len(a), sp.Action.Size())
			}
			acts[string(agent)] = a
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return acts, nil
}

// LogAction reports the agents' observations with the actions they took themselves (one for
// each agent of obs that is not done).
func (m *MultiAgent) LogAction(ctx context.Context, id string, obs, actions map[string][]float32) error {
	return m.c.send(ctx, id, "log_action", agents(obs), agents(actions), false, nil)
}

// LogReturns adds each agent's reward to its current step and marks the agents of dones
// done; infos, when not nil, maps agent ids to their infos (sent with encoding/json).
func (m *MultiAgent) LogReturns(ctx context.Context, id string, rewards map[string]float64, dones map[string]bool, infos map[string]map[string]any) error {
	c := m.c
	b := c.get()
	defer c.put(b)
	b.req = append(b.req[:0], `{"reward":{`...)
	ids := make([]string, 0, len(rewards))
	for a := range rewards {
		ids = append(ids, a)
	}
	slices.Sort(ids)
	for i, a := range ids {
		if i > 0 {
			b.req = append(b.req, ',')
		}
		b.req = wire.AppendString(b.req, a)
		b.req = append(b.req, ':')
		b.req = wire.AppendFloat64(b.req, rewards[a])
	}
	b.req = append(b.req, '}')
	if len(dones) > 0 {
		data, err := json.Marshal(dones)
		if err != nil {
			return fmt.Errorf("client: dones: %w", err)
		}
		b.req = append(b.req, `,"done":`...)
		b.req = append(b.req, data...)
	}
	if infos != nil {
		data, err := json.Marshal(infos)
		if err != nil {
			return fmt.Errorf("client: infos: %w", err)
		}
		b.req = append(b.req, `,"info":`...)
		b.req = append(b.req, data...)
	}
	b.req = append(b.req, '}')
	_, err := c.do(ctx, b, http.MethodPost, episodePath(id, "returns"), true)
	return err
}

// EndEpisode reports the final observations and ends the episode (terminated): every agent
// that has not ended ends, those not in obs with their last observation repeated.
func (m *MultiAgent) EndEpisode(ctx context.Context, id string, obs map[string][]float32) error {
	return m.end(ctx, id, obs, false)
}

// EndEpisodeTruncated is EndEpisode for an episode cut short.
func (m *MultiAgent) EndEpisodeTruncated(ctx context.Context, id string, obs map[string][]float32) error {
	return m.end(ctx, id, obs, true)
}

func (m *MultiAgent) end(ctx context.Context, id string, obs map[string][]float32, truncated bool) error {
	return m.c.send(ctx, id, "end", agents(obs), nil, truncated, nil)
}
