package scaleout

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// DefaultMaxPayload is the broker's largest message (NATS's default is 1 MiB; more than 8 MiB
// is not recommended).
const DefaultMaxPayload = 8 << 20

// BrokerOptions configure an embedded NATS server with JetStream.
type BrokerOptions struct {
	// Listen is host:port; "" means 127.0.0.1 on a free port (so does port 0).
	Listen string
	// StoreDir holds JetStream's files; required.
	StoreDir string
	// Token, when set, is required from every client. It is required when Listen is not a
	// loopback address.
	Token string
	// MaxPayload is the largest message in bytes (DefaultMaxPayload when 0).
	MaxPayload int32
}

// Broker is an embedded NATS server with JetStream.
type Broker struct {
	ns    *server.Server
	token string
}

// ErrTokenRequired is returned for a broker that would listen beyond loopback without a token.
var ErrTokenRequired = errors.New("scaleout: a token is required to listen beyond the loopback interface")

// StartBroker starts an embedded server and waits until it accepts connections.
func StartBroker(o BrokerOptions) (*Broker, error) {
	if o.StoreDir == "" {
		return nil, errors.New("scaleout: the broker needs a store directory")
	}
	host, port := "127.0.0.1", -1
	if o.Listen != "" {
		h, p, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("scaleout: listen address %q: %w", o.Listen, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("scaleout: listen address %q: bad port", o.Listen)
		}
		host = h
		if n != 0 {
			port = n
		}
	}
	if !isLoopback(host) && o.Token == "" {
		return nil, fmt.Errorf("%w (listen %q)", ErrTokenRequired, o.Listen)
	}
	if o.MaxPayload < 0 {
		return nil, fmt.Errorf("scaleout: max payload %d: want >= 0", o.MaxPayload)
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	opts := &server.Options{
		ServerName:    "onnxrl-sampler",
		Host:          host,
		Port:          port,
		JetStream:     true,
		StoreDir:      o.StoreDir,
		NoSigs:        true,
		MaxPayload:    o.MaxPayload,
		Authorization: o.Token,
		// The default (64 MiB) is the server's limit on a client's pending bytes; 1 MiB
		// messages need room for several.
		MaxPending: 256 << 20,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("scaleout: broker: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("scaleout: broker on %s:%d did not start within 10s (port in use? store %s locked by another broker?)", host, port, o.StoreDir)
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("scaleout: broker: JetStream did not start on store %s", o.StoreDir)
	}
	return &Broker{ns: ns, token: o.Token}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL is the address other processes connect to (nats://host:port).
func (b *Broker) URL() string { return b.ns.ClientURL() }

// Connect opens an in-process client connection (no sockets) with the broker's token.
func (b *Broker) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(b.ns), nats.Name("sample (in-process)")}, opts...)
	if b.token != "" {
		opts = append(opts, nats.Token(b.token))
	}
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("scaleout: connect to the embedded broker: %w", err)
	}
	return nc, nil
}

// Close shuts the server down and waits until it has stopped. Safe to call twice.
func (b *Broker) Close() error {
	b.ns.Shutdown()
	b.ns.WaitForShutdown()
	return nil
}

// ConnectOptions say how to reach a NATS server by URL.
type ConnectOptions struct {
	Token string // a token (--token)
	Creds string // a credentials file with a user JWT and nkey seed (--creds)
	Name  string // the connection's name, shown by the server
}

// Connect connects to a NATS server by URL, reconnecting forever after a lost connection
// (publishers retry until the server is back).
func Connect(url string, o ConnectOptions) (*nats.Conn, error) {
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if o.Name != "" {
		opts = append(opts, nats.Name(o.Name))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("scaleout: connect to %s: %w", url, err)
	}
	return nc, nil
}
