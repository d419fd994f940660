package main

import (
	"context"
	"io"
	"math"
	"os"
	"os/signal"
	"syscall"

	"github.com/onnxrl/sampler/scaleout"
)

const brokerArgs = "[--listen HOST:PORT] [--store DIR] [--token T] [--max-payload SIZE]"

// runBroker runs the embedded NATS server alone until SIGINT or SIGTERM.
func runBroker(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("broker", brokerArgs, stdout)
	listen := fs.String("listen", "127.0.0.1:4222", "address to listen on (a token is required beyond loopback)")
	store := fs.String("store", "nats-store", "directory of JetStream's files")
	token := fs.String("token", "", "token every client must give")
	maxPayload := fs.String("max-payload", "8MiB", "largest message (NATS's default is 1MiB; above 8MiB is not recommended)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	mp, err := parseSize(*maxPayload)
	if err != nil || mp < 4096 || mp > math.MaxInt32 {
		return usagef("--max-payload %q: want a size from 4KiB to 2GiB", *maxPayload)
	}
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{Listen: *listen, StoreDir: *store, Token: *token, MaxPayload: int32(mp)})
	if err != nil {
		return err
	}
	defer b.Close()
	printURL(stderr, b.URL(), "any")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
