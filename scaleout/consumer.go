package scaleout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConsumerOptions configure a Consumer.
type ConsumerOptions struct {
	Run string
	// Durable names the consumer; learners of one group share it and split the messages
	// ("drain" when empty).
	Durable string
	// AckWait is how long a fetched message may stay unacknowledged before the server
	// delivers it again (10 minutes when 0).
	AckWait time.Duration
	// MaxAckPending is how many messages may be out unacknowledged (10000 when 0).
	MaxAckPending int
}

// Consumer fetches a run's sample messages through a durable pull consumer with explicit
// acknowledgements.
type Consumer struct {
	c jetstream.Consumer
}

// NewConsumer creates (or binds to) the durable consumer of run's stream.
func NewConsumer(ctx context.Context, js jetstream.JetStream, o ConsumerOptions) (*Consumer, error) {
	if err := CheckName("run", o.Run); err != nil {
		return nil, err
	}
	if o.Durable == "" {
		o.Durable = "drain"
	}
	if err := CheckName("consumer", o.Durable); err != nil {
		return nil, err
	}
	if o.AckWait == 0 {
		o.AckWait = 10 * time.Minute
	}
	if o.MaxAckPending == 0 {
		o.MaxAckPending = 10000
	}
	c, err := js.CreateOrUpdateConsumer(ctx, StreamName(o.Run), jetstream.ConsumerConfig{
		Durable: o.Durable, AckPolicy: jetstream.AckExplicitPolicy, AckWait: o.AckWait,
		MaxAckPending: o.MaxAckPending, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("scaleout: run %q has no stream %s on this server (no sampler has published to it)", o.Run, StreamName(o.Run))
		}
		return nil, fmt.Errorf("scaleout: consumer %s on %s: %w", o.Durable, StreamName(o.Run), err)
	}
	return &Consumer{c: c}, nil
}

// Fetch returns up to n messages, waiting at most wait for the first. None and a nil error
// mean the stream stayed empty.
func (c *Consumer) Fetch(n int, wait time.Duration) ([]jetstream.Msg, error) {
	// Each sample message is at most the server's max payload; ask for a bounded number
	// (fetching near 64 MiB at once resets the connection).
	b, err := c.c.Fetch(n, jetstream.FetchMaxWait(wait))
	if err != nil {
		return nil, fmt.Errorf("scaleout: fetch: %w", err)
	}
	var out []jetstream.Msg
	for m := range b.Messages() {
		out = append(out, m)
	}
	if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		return out, fmt.Errorf("scaleout: fetch: %w", err)
	}
	return out, nil
}

// AckAll acknowledges msgs, the last one with a confirmation from the server: once it
// returns nil, the server has processed every ack (they travel in order on one connection).
// Messages acknowledged before are skipped, so a failed AckAll can simply be called again.
func AckAll(ctx context.Context, msgs []jetstream.Msg) error {
	for i, m := range msgs {
		var err error
		if i == len(msgs)-1 {
			err = m.DoubleAck(ctx)
		} else {
			err = m.Ack()
		}
		if err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			return fmt.Errorf("scaleout: acknowledge: %w", err)
		}
	}
	return nil
}

// Info is the consumer's state on the server.
func (c *Consumer) Info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	return c.c.Info(ctx)
}
