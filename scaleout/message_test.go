package scaleout

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/nats-io/nats.go"
)

func TestEncodePartsSplit(t *testing.T) {
	rec := record(t, testBatch(0, 1000), nil)
	e := partEncoder{limit: 8 << 10}
	parts, err := e.encode(rec, 777)
	if err != nil {
		t.Fatal(err)
	}
	steps, next := 0, int64(0)
	for _, p := range parts {
		if len(p.data) > 8<<10 {
			t.Fatalf("part of %d bytes", len(p.data))
		}
		got, _, err := Decode(&nats.Msg{Subject: "s", Data: p.data, Header: nats.Header{HeaderEnvSteps: {itoa(p.envSteps)}}})
		if err != nil {
			t.Fatal(err)
		}
		steps += got.EnvSteps
		for _, id := range got.Policy("default_policy").EpsID {
			if id != next {
				t.Fatalf("eps_id %d, want %d", id, next)
			}
			next++
		}
	}
	if steps != 777 || next != 1000 || len(parts) < 2 {
		t.Fatalf("%d parts, %d steps, %d rows", len(parts), steps, next)
	}
	small := partEncoder{limit: 10}
	if _, err := small.encode(rec, 1000); err == nil {
		t.Fatal("a row larger than the limit was accepted")
	}
}

func itoa(n int) string {
	b := []byte{}
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// FuzzDecode: whatever arrives on the stream, Decode returns an error or a batch, never a
// panic.
func FuzzDecode(f *testing.F) {
	rec := record(f, testBatch(0, 3), map[string]string{"k": "v"})
	e := partEncoder{limit: 1 << 20}
	parts, err := e.encode(rec, 3)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(parts[0].data)
	f.Add([]byte{})
	f.Add([]byte("ARROW1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		Decode(&nats.Msg{Subject: "s", Data: data, Header: nats.Header{}})
	})
}

// TestPartEncoderReuses: once warm, a batch is split at the first try (the last batch's bytes
// per row guess the parts) into the buffers given back, with the same bytes.
func TestPartEncoderReuses(t *testing.T) {
	rec := record(t, testBatch(0, 1000), nil)
	e := partEncoder{limit: 8 << 10}
	warm, err := e.encode(rec, 1000) // buffers sized by a guess of bytes per row
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range warm {
		e.recycle(p.data)
	}
	first, err := e.encode(rec, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	bufs := map[*byte]bool{}
	for _, p := range first {
		want = append(want, append([]byte(nil), p.data...))
		bufs[&p.data[:1][0]] = true
		e.recycle(p.data)
	}
	second, err := e.encode(rec, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != len(first) {
		t.Fatalf("%d parts, then %d", len(first), len(second))
	}
	reused := 0
	for i, p := range second {
		if string(p.data) != string(want[i]) {
			t.Fatalf("part %d differs the second time", i)
		}
		if bufs[&p.data[:1][0]] {
			reused++
		}
	}
	if len(e.free) != 0 || reused == 0 {
		t.Fatalf("%d of %d parts in a buffer given back, %d left unused", reused, len(second), len(e.free))
	}
}

// TestDecodeRefusesHugeBuffer: a compressed buffer whose stated uncompressed size is far
// beyond what the message can hold is an error, not an attempt to allocate it.
func TestDecodeRefusesHugeBuffer(t *testing.T) {
	rec := record(t, testBatch(0, 1000), nil)
	e := partEncoder{limit: 8 << 20}
	parts, err := e.encode(rec, 1000)
	if err != nil || len(parts) != 1 {
		t.Fatal(len(parts), err)
	}
	data := parts[0].data
	hdr := nats.Header{HeaderEnvSteps: {"1000"}}
	if _, _, err := Decode(&nats.Msg{Subject: "s", Data: data, Header: hdr}); err != nil {
		t.Fatal(err)
	}
	// The obs buffer (1000 rows of 4 float32) starts with its uncompressed size, 16000.
	size := binary.LittleEndian.AppendUint64(nil, 16000)
	at := bytes.LastIndex(data, size)
	if at < 0 {
		t.Fatal("no compressed buffer of 16000 bytes in the message")
	}
	bad := bytes.Clone(data)
	binary.LittleEndian.PutUint64(bad[at:], 1<<40)
	if _, _, err := Decode(&nats.Msg{Subject: "s", Data: bad, Header: hdr}); err == nil {
		t.Fatal("a buffer of 1 TiB was accepted")
	} else {
		t.Log(err)
	}
}

// sharedFieldsStream is an Arrow IPC stream whose schema nests depth levels of fields, each
// level's children vector pointing k times at the same field of the level below: a small
// message that stands for k^depth fields.
func sharedFieldsStream(k, depth int) []byte {
	b := flatbuffers.NewBuilder(1024)
	b.StartObject(0) // the Bool type
	boolType := b.EndObject()
	var child flatbuffers.UOffsetT
	for level := range depth {
		var children flatbuffers.UOffsetT
		if level > 0 {
			b.StartVector(4, k, 4)
			for range k {
				b.PrependUOffsetT(child)
			}
			children = b.EndVector(k)
		}
		name := b.CreateString("f")
		b.StartObject(7)
		b.PrependUOffsetTSlot(0, name, 0)
		b.PrependByteSlot(2, 6, 0) // type_type Bool
		b.PrependUOffsetTSlot(3, boolType, 0)
		if level > 0 {
			b.PrependUOffsetTSlot(5, children, 0)
		}
		child = b.EndObject()
	}
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(child)
	fields := b.EndVector(1)
	b.StartObject(4)
	b.PrependUOffsetTSlot(1, fields, 0)
	schema := b.EndObject()
	b.StartObject(5)
	b.PrependInt16Slot(0, 4, 0) // MetadataVersion V5
	b.PrependByteSlot(1, 1, 0)  // header Schema
	b.PrependUOffsetTSlot(2, schema, 0)
	b.Finish(b.EndObject())
	meta := b.FinishedBytes()
	for len(meta)%8 != 0 {
		meta = append(meta, 0)
	}
	out := binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(meta)))
	out = append(out, meta...)
	return append(out, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0)
}

// TestDecodeRefusesSharedFields: fields shared between parents, which Arrow's reader would
// expand to 8^12 of them, are an error at once. The same stream with one child a level
// passes the check.
func TestDecodeRefusesSharedFields(t *testing.T) {
	if err := checkIPC(sharedFieldsStream(1, 12)); err != nil {
		t.Fatalf("a chain of 12 fields: %v", err)
	}
	start := time.Now()
	_, _, err := Decode(&nats.Msg{Subject: "s", Data: sharedFieldsStream(8, 12), Header: nats.Header{}})
	if err == nil {
		t.Fatal("8^12 fields were accepted")
	}
	t.Logf("%v after %v", err, time.Since(start))
}
