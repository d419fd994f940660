package envrunner

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// TestOrderRows checks orderRows against its definition on rows in every kind of order:
// agents that act first, then the done ones, each part by sub-environment, equals in the
// order they came (stable), and the count of the first part.
func TestOrderRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := rng.IntN(40)
		if trial%100 == 0 {
			n = 300 + rng.IntN(300) // past the insertion sort's budget when shuffled
		}
		envs := 1 + rng.IntN(n+1)
		rows := make([]row, n)
		for j := range rows {
			rows[j].rec = &agentRec{envID: int32(rng.IntN(envs)), done: rng.IntN(5) == 0}
		}
		switch trial % 4 {
		case 0: // in order, but for a few rows queued at the end (a step's resets)
			orderRowsRef(rows[:n*3/4])
		case 1: // backwards
			orderRowsRef(rows)
			for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
				rows[i], rows[j] = rows[j], rows[i]
			}
		} // otherwise: shuffled
		for j := range rows {
			rows[j].reward = float64(j) // the order they came in, to check stability
		}
		want := append([]row(nil), rows...)
		wantLive := orderRowsRef(want)
		if live := orderRows(rows); live != wantLive {
			t.Fatalf("trial %d: live %d, want %d", trial, live, wantLive)
		}
		for j := range rows {
			if rows[j].rec != want[j].rec || rows[j].reward != want[j].reward {
				t.Fatalf("trial %d (%d rows): row %d is (env %d, done %v, came %v), want (env %d, done %v, came %v)",
					trial, n, j, rows[j].rec.envID, rows[j].rec.done, rows[j].reward,
					want[j].rec.envID, want[j].rec.done, want[j].reward)
			}
		}
	}
}

// orderRowsRef is orderRows' definition, with the library's stable sort on a key.
func orderRowsRef(rows []row) (live int) {
	key := func(ro row) int64 {
		k := int64(ro.rec.envID)
		if ro.rec.done {
			k += 1 << 40
		}
		return k
	}
	sort.SliceStable(rows, func(i, j int) bool { return key(rows[i]) < key(rows[j]) })
	for _, ro := range rows {
		if !ro.rec.done {
			live++
		}
	}
	return live
}
