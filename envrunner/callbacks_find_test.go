package envrunner

import "testing"

type onlyEnd struct{ ends int }

func (c *onlyEnd) OnEpisodeEnd(*Runner, *Episode) { c.ends++ }

type withStep struct{ onlyEnd }

func (*withStep) OnEpisodeStep(*Runner, *Episode) {}

// TestFindCallbacks: the runner calls the methods a Callbacks value has, found once; one
// without OnEpisodeStep keeps the runner's fast path (stepCB false), as no callbacks do.
func TestFindCallbacks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v      Callbacks
		end    bool
		stepCB bool
	}{
		{"nil", nil, false, false},
		{"OnEpisodeEnd only", &onlyEnd{}, true, false},
		{"with OnEpisodeStep", &withStep{}, true, true},
		{"a value without methods", struct{}{}, false, false},
	} {
		c := findCallbacks(tc.v)
		if (c.end != nil) != tc.end || (c.step != nil) != tc.stepCB || c.created != nil || c.start != nil || c.sample != nil {
			t.Errorf("%s: found %+v", tc.name, c)
		}
	}
}
