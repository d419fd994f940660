package scaleout

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
)

func TestEncodePartsSplit(t *testing.T) {
	var bd arrowbatch.Builder
	m := testBatch(0, 1000)
	rec, ok, err := bd.Build(m, nil)
	if err != nil || !ok {
		t.Fatal(err)
	}
	defer rec.Release()
	parts, err := encodeParts(rec, 777, 8<<10)
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
	if _, err := encodeParts(rec, 1000, 10); err == nil {
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
	var bd arrowbatch.Builder
	rec, _, err := bd.Build(testBatch(0, 3), map[string]string{"k": "v"})
	if err != nil {
		f.Fatal(err)
	}
	parts, err := encodeParts(rec, 3, 1<<20)
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
