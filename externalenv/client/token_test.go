package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/client"
	"github.com/onnxrl/sampler/externalenv/server"
)

// A server with a token refuses a client without it (401) and serves one with it.
func TestToken(t *testing.T) {
	ts := startServer(t, externalenv.Options{}, server.Options{Access: server.Access{Token: "t0k"}})
	ctx := context.Background()
	_, err := newClient(t, ts.url).StartEpisode(ctx, "", true)
	var ce *client.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, http.StatusUnauthorized, ce.StatusCode)

	c, err := client.New(ts.url, client.Options{Token: "t0k"})
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	id, err := c.StartEpisode(ctx, "", true)
	require.NoError(t, err)
	_, err = c.GetAction(ctx, id, []float32{0, 0, 0, 0})
	require.NoError(t, err)
	require.NoError(t, c.EndEpisode(ctx, id, []float32{0, 0, 0, 0}))
	ts.stop(t)
}
