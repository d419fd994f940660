package externalenv

import (
	"sync"
	"testing"
	"time"
)

// TestReadyQueueOrder: one producer, no collect until the ring is full and the stack holds
// the rest: collect returns every episode once, oldest first.
func TestReadyQueueOrder(t *testing.T) {
	var q readyQueue
	q.init(1) // the smallest ring, 64
	eps := make([]*episode, 200)
	for i := range eps {
		eps[i] = &episode{}
		q.push(eps[i])
	}
	if got := q.pushed(); got != int64(len(eps)) {
		t.Fatalf("pushed %d, want %d", got, len(eps))
	}
	got, blocked := q.collect(nil)
	if blocked || len(got) != len(eps) {
		t.Fatalf("collect: %d episodes, blocked %v; want %d", len(got), blocked, len(eps))
	}
	for i := range eps {
		if got[i] != eps[i] {
			t.Fatalf("episode %d out of order", i)
		}
	}
	if got, _ := q.collect(nil); len(got) != 0 || q.taken != int64(len(eps)) {
		t.Fatalf("second collect: %d episodes, taken %d", len(got), q.taken)
	}
	for _, ep := range eps[:3] { // the ring goes on where it was
		q.push(ep)
	}
	if got, _ := q.collect(nil); len(got) != 3 || got[0] != eps[0] || got[2] != eps[2] {
		t.Fatalf("after wrapping: %d episodes", len(got))
	}
}

// TestReadyQueueConcurrent: producers push while the consumer collects and sleeps until the
// pushes it wants: every episode arrives exactly once, and the consumer is never left asleep
// with its pushes in.
func TestReadyQueueConcurrent(t *testing.T) {
	const producers, per = 4, 20000
	var q readyQueue
	q.init(64)
	eps := make([][]episode, producers)
	var wg sync.WaitGroup
	for p := range producers {
		eps[p] = make([]episode, per)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				q.push(&eps[p][i])
			}
		}()
	}
	index := map[*episode][2]int{}
	for p := range eps {
		for i := range eps[p] {
			index[&eps[p][i]] = [2]int{p, i}
		}
	}
	seen := make(map[*episode]bool, producers*per)
	var buf []*episode
	deadline := time.After(20 * time.Second)
	for len(seen) < producers*per {
		var blocked bool
		buf, blocked = q.collect(buf[:0])
		for _, ep := range buf {
			if seen[ep] {
				t.Fatalf("episode %v collected twice", index[ep])
			}
			seen[ep] = true
		}
		if blocked || len(buf) > 0 || len(seen) == producers*per {
			continue
		}
		if !q.sleepUntil(1) {
			continue
		}
		select {
		case <-q.wake:
		case <-deadline:
			t.Fatalf("asleep with %d of %d collected, %d pushed", len(seen), producers*per, q.pushed())
		}
		q.awake()
	}
	wg.Wait()
	if q.taken != producers*per {
		t.Fatalf("taken %d, want %d", q.taken, producers*per)
	}
}
