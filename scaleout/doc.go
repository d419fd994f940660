// Package scaleout moves sample batches from many sampler processes to a learner through NATS
// JetStream, and new policy versions back: an embedded broker (Broker), the stream and buckets
// of a run (EnsureRun), a publisher that turns MultiAgentBatches into Arrow IPC messages
// (Publisher), a consumer that turns them back (Consumer, Decode) and the policy store
// (PublishPolicy, CurrentPolicy). The same client code talks to the embedded server and to a
// separately run NATS deployment.
//
// # Names
//
// A run NAME (letters, digits, '-' and '_') has the stream RL_NAME_SAMPLES (subjects
// rl.NAME.samples.SAMPLER, work-queue retention, file storage, a byte limit with discard-new),
// the object store rl_NAME_models (objects POLICY/v000043.onnx) and the key-value bucket
// rl_NAME_policy (key POLICY: the current version, its object and its sha256, as JSON). The
// bucket rl_NAME_drained holds the drains' claims (key DURABLE.TOKEN: the stream sequences of
// the messages of one committed file; see Claims). A claim is removed, leaving nothing, once
// its file's messages are acknowledged; it has no age limit, which would let a drain restarted
// after it lose a committed file (see Claims).
//
// # Messages
//
// Each message is one Arrow IPC stream (schema, one record batch, end) of the columns of
// envrunner/arrowbatch, its buffers compressed with LZ4 (Arrow's LZ4_FRAME body compression,
// which Arrow readers undo on their own); a sample batch whose encoding exceeds the server's max payload is split
// by rows into several messages, each a valid batch on its own. Headers: Nats-Msg-Id
// (SAMPLER-SEQ, for the stream's de-duplication window), Rl-Policy-Version, Rl-Env-Steps (the
// environment steps of the message; the parts of a split batch add up to the batch's),
// Rl-Created (RFC 3339), Rl-Sampler, Rl-Batch and Rl-Part ("i/n").
//
// # Back-pressure and delivery
//
// The Publisher keeps up to PublisherOptions.Window messages on their way, published and not
// yet acknowledged, so that it encodes and sends while the stream stores. A full stream answers
// a publish with error 10077; the Publisher then waits and sends the same message again with
// the same id, so its bounded queue fills, its Write blocks, and the runners
// wait for free batches: nothing is dropped. Lost connections are retried the same way, and the
// de-duplication window removes the copies that had arrived. A Consumer acknowledges messages
// only after the caller has stored them (see sample drain).
//
// # Usage
//
//	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: dir}) // 127.0.0.1, a free port
//	nc, err := b.Connect()
//	js, err := jetstream.New(nc)
//	err = scaleout.EnsureRun(ctx, js, "default", scaleout.RunConfig{})
//	p, err := scaleout.NewPublisher(ctx, nc, js, scaleout.PublisherOptions{Run: "default", Sampler: "w0", OnPublished: release})
//	err = p.Write(batch) // blocks while the queue is full
//	err = p.Close()
package scaleout
