package server

import (
	"encoding/json"
	"net/http"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// singleAgent is the episode endpoints over an ExternalEnv (see episodeAPI).
type singleAgent struct {
	s   *Server
	env *externalenv.ExternalEnv
}

// action: POST /v1/episodes/{id}/action {"observation"} -> 200 {"action"}.
func (a singleAgent) action(b *reqBuf, id string, r *http.Request, w http.ResponseWriter) (int, error) {
	s := a.s
	if err := s.decodeObs(b, nil); err != nil {
		return 0, err
	}
	act, err := a.env.GetAction(r.Context(), id, b.obs)
	if err != nil {
		return 0, err
	}
	b.out = append(b.out[:0], `{"action":`...)
	b.out = wire.AppendValue(b.out, s.actSpace, act)
	b.out = append(b.out, '}')
	return writeJSON(w, http.StatusOK, b.out), nil
}

// logAction: POST /v1/episodes/{id}/log_action {"observation", "action"} -> 204.
func (a singleAgent) logAction(b *reqBuf, id string, w http.ResponseWriter) (int, error) {
	s := a.s
	d := &b.dec
	b.act = b.act[:0]
	gotAct := false
	err := s.decodeObs(b, func(key []byte) (bool, error) {
		if string(key) != "action" {
			return false, nil
		}
		var err error
		b.act, err = d.Value(b.act[:0], s.actSpace)
		gotAct = true
		return true, err
	})
	if err != nil {
		return 0, err
	}
	if !gotAct {
		return 0, badRequest(`missing member "action"`)
	}
	if err := checkValue(externalenv.ErrBadAction, "action", s.actSpace, b.act); err != nil {
		return 0, err
	}
	if err := a.env.LogAction(id, b.obs, b.act); err != nil {
		return 0, err
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}

// decodeInfo reads an info object (or null) with encoding/json: infos are free-form and rare.
func decodeInfo(d *wire.Decoder) (env.Info, error) {
	if d.Null() {
		return nil, nil
	}
	raw, err := d.Raw()
	if err != nil {
		return nil, err
	}
	var info env.Info
	if err := json.Unmarshal(raw, &info); err != nil {
		return nil, badRequest("info: %s", jsonProblem(err, "an object"))
	}
	return info, nil
}

// returns: POST /v1/episodes/{id}/returns {"reward", "info"?} -> 204.
func (a singleAgent) returns(b *reqBuf, id string, w http.ResponseWriter) (int, error) {
	d := &b.dec
	var reward float64
	var info env.Info
	got := false
	err := member(d, func(key []byte) (bool, error) {
		var err error
		switch string(key) {
		case "reward":
			reward, err = d.Float64()
			got = true
		case "info":
			info, err = decodeInfo(d)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return 0, err
	}
	if !got {
		return 0, badRequest(`missing member "reward"`)
	}
	if err := checkReward(reward, nil); err != nil {
		return 0, err
	}
	if err := a.env.LogReturns(id, reward, info); err != nil {
		return 0, err
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}

// end: POST /v1/episodes/{id}/end {"observation", "truncated"?} -> 204.
func (a singleAgent) end(b *reqBuf, id string, w http.ResponseWriter) (int, error) {
	s := a.s
	truncated := false
	if err := s.decodeObs(b, func(key []byte) (bool, error) {
		return truncatedMember(&b.dec, key, &truncated)
	}); err != nil {
		return 0, err
	}
	end := a.env.EndEpisode
	if truncated {
		end = a.env.EndEpisodeTruncated
	}
	if err := end(id, b.obs); err != nil {
		return 0, err
	}
	s.ended()
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}
