package output

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// decodeHybrid reads n values of width bits from Parquet's RLE/bit-packed hybrid encoding,
// written from the format's description: the tests' reference reader.
func decodeHybrid(b []byte, width, n int) ([]uint32, error) {
	var out []uint32
	for len(out) < n {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errors.New("bad run header")
		}
		b = b[k:]
		if h&1 == 0 { // RLE run
			nb := (width + 7) / 8
			if len(b) < nb {
				return nil, errors.New("short RLE value")
			}
			var v uint32
			for i := range nb {
				v |= uint32(b[i]) << (8 * i)
			}
			b = b[nb:]
			for range h >> 1 {
				out = append(out, v)
			}
			continue
		}
		groups := int(h >> 1)
		if len(b) < groups*width {
			return nil, errors.New("short bit-packed run")
		}
		for i := range groups * 8 {
			var v uint32
			for j := range width {
				bit := i*width + j
				v |= uint32(b[bit/8]>>(bit%8)&1) << j
			}
			out = append(out, v)
		}
		b = b[groups*width:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes left over", len(b))
	}
	return out[:n], nil
}

// TestHybrid: runs of every length and literals of every count, at widths 1 to 20, read back
// as written.
func TestHybrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		width := 1 + i%20
		var v []uint32
		for len(v) < 1+rng.IntN(300) {
			x := rng.Uint32() & (1<<width - 1)
			run := 1 + rng.IntN(20)
			if rng.IntN(2) == 0 {
				run = 1
			}
			for range run {
				v = append(v, x)
			}
		}
		b := appendHybrid(nil, v, width)
		got, err := decodeHybrid(b, width, len(v))
		if err != nil || !slices.Equal(got, v) {
			t.Fatalf("width %d, %v: got %v, %v", width, v, got, err)
		}
	}
	if got := len(appendHybrid(nil, make([]uint32, 100000), 1)); got > 4 {
		t.Errorf("100,000 zeros take %d bytes, want one run", got)
	}
}

func TestBitWidth(t *testing.T) {
	for _, c := range [][2]int{{1, 1}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {256, 8}, {257, 9}} {
		if got := bitWidth(c[0]); got != c[1] {
			t.Errorf("bitWidth(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

// TestListLevels: the levels of rows of every kind of width read back as a list column's:
// repetition 0 at each row's first value and 1 after, definition 1; an empty row 0 and 0.
func TestListLevels(t *testing.T) {
	var l listLevels
	for _, w := range []int{0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 100} {
		for _, rows := range []int{1, 2, 5, 17, 1000, 3} { // 3 after 1000: a prefix of what was made
			b, repLen := l.levels(w, rows)
			var wantRep, wantDef []uint32
			for range rows {
				if w == 0 {
					wantRep, wantDef = append(wantRep, 0), append(wantDef, 0)
				}
				for k := range w {
					wantRep, wantDef = append(wantRep, uint32(min(k, 1))), append(wantDef, 1)
				}
			}
			rep, err := decodeHybrid(b[:repLen], 1, len(wantRep))
			if err != nil || !slices.Equal(rep, wantRep) {
				t.Fatalf("width %d, %d rows: repetition levels %v, %v", w, rows, rep, err)
			}
			def, err := decodeHybrid(b[repLen:], 1, len(wantDef))
			if err != nil || !slices.Equal(def, wantDef) {
				t.Fatalf("width %d, %d rows: definition levels %v, %v", w, rows, def, err)
			}
		}
	}
}

func TestPackBools(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 40 {
		v := make([]bool, n)
		want := make([]byte, (n+7)/8)
		for i := range v {
			v[i] = rng.IntN(2) == 0
			if v[i] {
				want[i/8] |= 1 << (i % 8)
			}
		}
		if got := packBools(nil, v); !slices.Equal(got, want) {
			t.Fatalf("%v: %08b, want %08b", v, got, want)
		}
	}
}

// wideBatch returns a random batch of n rows with observations and a state of the given
// widths (0, 1, narrow, wide), agent ids in runs and alternating, and infos on some rows:
// columns of many pages.
func wideBatch(rng *rand.Rand, n, obs, state int) *envrunner.SampleBatch {
	b := randomBatch(rng, n)
	b.ObsWidth = obs
	b.Obs, b.NewObs = randomFloats(rng, n*obs), randomFloats(rng, n*obs)
	b.StateWidths = []int{state}
	b.StateIn = [][]float32{randomFloats(rng, n*state)}
	b.StateOut = [][]float32{randomFloats(rng, n*state)}
	b.SeqLens = b.SeqLens[:0]
	for left := n; left > 0; left -= 20 {
		b.SeqLens = append(b.SeqLens, int32(min(left, 20)))
	}
	ids := []string{"a", "b", "longer agent"}
	b.Infos = make([]env.Info, n)
	for i := range n {
		k := (i / 300) % 3 // runs
		if i%3000 > 2000 {
			k = i % 2 // alternating
		}
		b.AgentID[i] = ids[k]
		if i%7 == 0 {
			b.Infos[i] = env.Info{"i": int64(i)}
		}
	}
	if err := b.Validate(); err != nil {
		panic(err)
	}
	return b
}

// TestParquetManyPages: batches whose columns take many pages (pages of 1 KiB; vectors of
// widths 0, 1, 5 and 40, dictionary indices in runs and alternating, infos on some rows),
// with each codec, come back as written, from our reader and pyarrow.
func TestParquetManyPages(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	var files []string
	rows := int64(0)
	for _, c := range []Compression{Snappy, Zstd, Uncompressed} {
		for _, w := range [][2]int{{0, 1}, {1, 40}, {5, 0}, {40, 3}} {
			path := filepath.Join(dir, fmt.Sprintf("m-%d-%d-%d.parquet", c, w[0], w[1]))
			m := &envrunner.MultiAgentBatch{EnvSteps: 9000}
			b := wideBatch(rng, 7000, w[0], w[1])
			*m.Policy("p0") = *b
			*m.Policy("p1") = *b // the same columns: one file
			writeAll(t, path, Options{Compression: c, Metadata: Source{Env: "CartPole-v1", Seed: 3}.Metadata(), pageSize: 1 << 10}, m)
			var got []*envrunner.MultiAgentBatch
			if err := ReadParquet(path, func(g *envrunner.MultiAgentBatch) error { got = append(got, g); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("%s: %d batches", path, len(got))
			}
			if d := diffMulti(m, got[0], false); d != "" {
				t.Fatalf("%s: %s", path, d)
			}
			for col, hs := range pageHeaders(t, path) {
				if len(hs) < 2 {
					t.Fatalf("%s: column %s has %d pages, want several", path, col, len(hs))
				}
			}
			files = append(files, path)
			rows += 14000
		}
	}
	if out, err := checkParquet(t, filepath.Join("..", ".."), rows, files...); err != nil {
		t.Fatalf("check_parquet.py: %v\n%s", err, out)
	}
}

// pageHeaders returns the page headers of every column chunk of a Parquet file, by column
// path.
func pageHeaders(t *testing.T, path string) map[string][]tValue {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	fmd, _, err := readThriftStruct(data[len(data)-8-n : len(data)-8])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]tValue{}
	for _, rg := range fmd.field(fileMetaRowGroups).elems {
		for _, cc := range rg.field(rowGroupColumns).elems {
			md := cc.field(chunkMeta)
			at, end := chunkStart(md), chunkStart(md)+md.field(metaTotalCompressed).i
			for at < end {
				h, hn, err := readThriftStruct(data[at:])
				if err != nil {
					t.Fatal(err)
				}
				out[columnName(md)] = append(out[columnName(md)], h)
				at += int64(hn) + h.field(pageHeaderCompressedSize).i
			}
		}
	}
	return out
}

// TestParquetIncompressiblePages: with Snappy, the pages of float columns (which it does
// not shrink) are stored uncompressed, those of integer and boolean columns compressed; a
// version 2 page says which (is_compressed, field 7 of its header's field 8).
func TestParquetIncompressiblePages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.parquet")
	writeAll(t, path, Options{pageSize: 4 << 10}, single(cartPoleBatch(rand.New(rand.NewPCG(7, 8)), 20000)))
	compressed := func(h tValue) bool {
		v2 := h.field(8)
		if v2 == nil {
			return true // a dictionary page
		}
		f := v2.field(7)
		return f == nil || f.i == 1
	}
	for col, want := range map[string]bool{"obs.list.element": false, "action_logp": false,
		"eps_id": true, "t": true, "terminateds": true, "actions": true, "module_id": true} {
		hs := pageHeaders(t, path)[col]
		if len(hs) == 0 {
			t.Fatalf("no pages of %s", col)
		}
		n := 0
		for _, h := range hs {
			if compressed(h) == want {
				n++
			}
		}
		// The float columns try the codec again every skipPages pages.
		if n < len(hs)-(len(hs)+skipPages)/(skipPages+1) {
			t.Errorf("%s: %d of %d pages compressed=%v", col, n, len(hs), want)
		}
	}
}

// TestParquetStatistics: scalar columns have the minimum, maximum and null count of their
// values (NaN left out, a zero minimum -0), as Arrow's reader reads them; vector columns have
// none.
func TestParquetStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	b := cartPoleBatch(rng, 5000)
	b.Rewards[3] = float32(math.NaN())
	b.Rewards[4] = -2.5
	b.Rewards[5] = 7
	b.VfPreds[7] = 0
	b.AgentID[9] = "zz"
	b.AgentID[10] = "a"
	b.Infos = make([]env.Info, b.Count)
	b.Infos[11] = env.Info{"x": int64(1)}
	m := &envrunner.MultiAgentBatch{EnvSteps: 10000}
	*m.Policy("mlp") = *b
	*m.Policy("amlp") = *cartPoleBatch(rng, 5000)
	path := filepath.Join(t.TempDir(), "s.parquet")
	writeAll(t, path, Options{}, m)
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	rg := pf.MetaData().RowGroup(0)
	stats := map[string]metadata.TypedStatistics{}
	for i := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cc.Statistics()
		if err != nil {
			t.Fatal(err)
		}
		stats[cc.PathInSchema().String()] = st
	}
	a := m.PolicyBatches["amlp"]
	if st := stats["obs.list.element"]; st != nil {
		t.Errorf("obs has statistics: %v", st)
	}
	f32 := func(col string) (float32, float32) {
		st := stats[col].(*metadata.Float32Statistics)
		if !st.HasMinMax() || st.NullCount() != 0 {
			t.Fatalf("%s: %v", col, st)
		}
		return st.Min(), st.Max()
	}
	if lo, hi := f32("rewards"); lo != -2.5 || hi != 7 {
		t.Errorf("rewards: [%v, %v], want [-2.5, 7]", lo, hi)
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, v := range append(slices.Clone(a.VfPreds), b.VfPreds...) {
		lo, hi = min(lo, v), max(hi, v)
	}
	if gl, gh := f32("vf_preds"); gl != lo || gh != hi {
		t.Errorf("vf_preds: [%v, %v], want [%v, %v]", gl, gh, lo, hi)
	}
	eps := stats["eps_id"].(*metadata.Int64Statistics)
	if eps.Min() != 1000 || eps.Max() != 1000+4999/20 {
		t.Errorf("eps_id: [%d, %d]", eps.Min(), eps.Max())
	}
	ts := stats["t"].(*metadata.Int32Statistics)
	if ts.Min() != 0 || ts.Max() != 19 {
		t.Errorf("t: [%d, %d]", ts.Min(), ts.Max())
	}
	term := stats["terminateds"].(*metadata.BooleanStatistics)
	if term.Min() || !term.Max() {
		t.Errorf("terminateds: [%v, %v]", term.Min(), term.Max())
	}
	trunc := stats["truncateds"].(*metadata.BooleanStatistics)
	if trunc.Min() || trunc.Max() {
		t.Errorf("truncateds: [%v, %v], want all false", trunc.Min(), trunc.Max())
	}
	for col, want := range map[string][2]string{"agent_id": {"a", "zz"}, "module_id": {"amlp", "mlp"}} {
		st := stats[col].(*metadata.ByteArrayStatistics)
		if string(st.Min()) != want[0] || string(st.Max()) != want[1] {
			t.Errorf("%s: [%q, %q], want %q", col, st.Min(), st.Max(), want)
		}
	}
	if st := stats["infos"]; st == nil || st.NullCount() != 9999 {
		t.Errorf("infos: %v, want 9999 nulls", st)
	}
}
