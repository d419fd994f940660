package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/onnxrl/sampler/scaleout"
)

// natsFlags say which NATS server and run a command talks to (drain, status, publish-policy,
// worker).
type natsFlags struct {
	server, token, creds, run string
}

func (n *natsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.server, "server", "nats://127.0.0.1:4222", "NATS server URL (sample broker, or a NATS deployment with JetStream)")
	n.registerAuth(fs)
}

func (n *natsFlags) registerAuth(fs *flag.FlagSet) {
	fs.StringVar(&n.token, "token", "", "token for the NATS server")
	fs.StringVar(&n.creds, "creds", "", "NATS credentials file (user JWT and nkey seed)")
	fs.StringVar(&n.run, "run", "default", "run name: letters, digits, '-' and '_'")
}

func (n *natsFlags) check() error {
	if err := scaleout.CheckName("run", n.run); err != nil {
		return usagef("--run: %v", err)
	}
	if n.token != "" && n.creds != "" {
		return usagef("give --token or --creds, not both")
	}
	return nil
}

// connect connects to the server and opens its JetStream API.
func (n *natsFlags) connect(name string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := scaleout.Connect(n.server, scaleout.ConnectOptions{Token: n.token, Creds: n.creds, Name: name})
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

// printURL tells learners where the server is.
func printURL(stderr io.Writer, url, run string) {
	fmt.Fprintf(stderr, "sample: NATS server at %s (run %q: stream %s)\n", url, run, scaleout.StreamName(run))
}
