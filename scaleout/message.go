package scaleout

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/nats-io/nats.go"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
)

// part is one message's payload: an Arrow IPC stream of some rows of a batch.
type part struct {
	data     []byte
	envSteps int
	rows     int
}

// partEncoder writes record batches as Arrow IPC streams of at most limit bytes each, their
// buffers compressed with LZ4 (Arrow's LZ4_FRAME body compression). It writes into memory
// given back through recycle and sized by the messages before, instead of a buffer that grows
// by doubling (which cost the publisher a tenth of sample run --publish's CPU).
type partEncoder struct {
	limit  int
	free   [][]byte
	perRow float64 // bytes per row of the last batch, to guess how many parts the next needs
}

// recycle takes back a part's buffer once its message is no longer needed.
func (e *partEncoder) recycle(b []byte) {
	if cap(b) > 0 {
		e.free = append(e.free, b[:0])
	}
}

// buffer is an empty buffer: one given back when it has room for need bytes (the part's
// expected size), else a new one of alloc bytes (the expected size with room to spare). A
// buffer given back is not refused for want of the spare room: the guess grows a little when
// a batch is split into more parts (each carries the schema), and the buffers of the batch
// before must still do.
func (e *partEncoder) buffer(need, alloc int) []byte {
	var b []byte
	if n := len(e.free); n > 0 {
		b = e.free[n-1]
		e.free = e.free[:n-1]
	}
	if cap(b) < need {
		b = make([]byte, 0, max(need, alloc))
	}
	return b
}

// encode splits rec by rows into as few parts of at most e.limit bytes as it takes; envSteps
// (the batch's) is shared over the parts by rows, the parts adding up to it. A single row
// larger than the limit is an error.
func (e *partEncoder) encode(rec arrow.RecordBatch, envSteps int) ([]part, error) {
	rows := int(rec.NumRows())
	n := 1
	if e.perRow > 0 {
		// The guess leaves a tenth of the limit for the parts' uneven sizes.
		n = min(max(rows, 1), max(1, int(e.perRow*float64(rows)/(0.9*float64(e.limit)))+1))
	}
	for {
		parts, ok, err := e.tryParts(rec, n, envSteps)
		if err != nil || ok {
			if ok && rows > 0 {
				size := 0
				for _, p := range parts {
					size += len(p.data)
				}
				e.perRow = float64(size) / float64(rows)
			}
			return parts, err
		}
		if n >= rows {
			return nil, fmt.Errorf("scaleout: one row of the batch encodes to more than the server's max payload (%d bytes)", e.limit)
		}
		n = min(rows, 2*n)
	}
}

func (e *partEncoder) tryParts(rec arrow.RecordBatch, n, envSteps int) ([]part, bool, error) {
	rows := int(rec.NumRows())
	parts := make([]part, 0, n)
	fail := func() {
		for _, p := range parts {
			e.recycle(p.data)
		}
	}
	given := 0
	for i := range n {
		lo, hi := rows*i/n, rows*(i+1)/n
		slice := rec
		if n > 1 {
			slice = rec.NewSlice(int64(lo), int64(hi))
		}
		// The guess of the size; a new buffer leaves room for the schema and for rows longer
		// than the last batch's.
		need := int(e.perRow * float64(hi-lo))
		buf := bytes.NewBuffer(e.buffer(need, need+need/10+64<<10))
		w := ipc.NewWriter(buf, ipc.WithSchema(rec.Schema()), ipc.WithLZ4())
		err := w.Write(slice)
		if err == nil {
			err = w.Close()
		}
		if n > 1 {
			slice.Release()
		}
		if err != nil {
			e.recycle(buf.Bytes())
			fail()
			return nil, false, fmt.Errorf("scaleout: encode Arrow IPC: %w", err)
		}
		if buf.Len() > e.limit {
			e.recycle(buf.Bytes())
			fail()
			return nil, false, nil
		}
		steps := envSteps * hi / max(rows, 1)
		if i == n-1 {
			steps = envSteps
		}
		parts = append(parts, part{data: buf.Bytes(), envSteps: steps - given, rows: hi - lo})
		given = steps
	}
	return parts, true, nil
}

// Decode reads a sample message back into a batch, with the EnvSteps of its Rl-Env-Steps
// header (its rows when the header is missing), and returns the record's schema metadata
// (what output.Options.Metadata wants).
func Decode(msg *nats.Msg) (m *envrunner.MultiAgentBatch, meta map[string]string, err error) {
	// Arrow's IPC reader trusts the flatbuffers it reads and may index out of range on a
	// corrupt message: that is bad input, not a reason to stop a learner.
	defer func() {
		if p := recover(); p != nil {
			m, meta, err = nil, nil, fmt.Errorf("scaleout: message on %s is not a valid Arrow IPC stream: %v", msg.Subject, p)
		}
	}()
	return decode(msg)
}

func decode(msg *nats.Msg) (*envrunner.MultiAgentBatch, map[string]string, error) {
	if err := checkIPC(msg.Data); err != nil {
		return nil, nil, fmt.Errorf("scaleout: message on %s is not a valid Arrow IPC stream: %w", msg.Subject, err)
	}
	r, err := ipc.NewReader(bytes.NewReader(msg.Data), ipc.WithAllocator(newBoundedAlloc(len(msg.Data))))
	if err != nil {
		return nil, nil, fmt.Errorf("scaleout: message on %s is not Arrow IPC: %w", msg.Subject, err)
	}
	defer r.Release()
	meta := map[string]string{}
	md := r.Schema().Metadata()
	for i, k := range md.Keys() {
		meta[k] = md.Values()[i]
	}
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, nil, fmt.Errorf("scaleout: message on %s: %w", msg.Subject, err)
		}
		return nil, nil, fmt.Errorf("scaleout: message on %s holds no record batch", msg.Subject)
	}
	rec := r.RecordBatch()
	steps := int(rec.NumRows())
	if h := msg.Header.Get(HeaderEnvSteps); h != "" {
		if steps, err = strconv.Atoi(h); err != nil || steps < 0 {
			return nil, nil, fmt.Errorf("scaleout: message on %s: bad %s header %q", msg.Subject, HeaderEnvSteps, h)
		}
	}
	m, err := arrowbatch.ToBatch(rec, steps)
	if err != nil {
		return nil, nil, fmt.Errorf("scaleout: message on %s: %w", msg.Subject, err)
	}
	if r.Next() {
		return nil, nil, fmt.Errorf("scaleout: message on %s holds more than one record batch", msg.Subject)
	}
	return m, meta, nil
}
