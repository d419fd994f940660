package grow

import "testing"

type pair struct {
	a int
	b []int
}

// TestZero checks that Zero appends a zero element (also over storage that held one) and
// returns the new element.
func TestZero(t *testing.T) {
	s := make([]pair, 0, 1)
	p := Zero(&s)
	p.a, p.b = 1, []int{2}
	if len(s) != 1 || s[0].a != 1 || len(s[0].b) != 1 {
		t.Fatalf("after one Zero: %v", s)
	}
	s = s[:0] // the old element stays in the storage
	if p := Zero(&s); p.a != 0 || p.b != nil {
		t.Fatalf("Zero over used storage gave %v, want the zero value", *p)
	}
	Zero(&s) // grows past the capacity
	if len(s) != 2 || s[1].a != 0 || s[1].b != nil {
		t.Fatalf("after growing: %v", s)
	}
}

func TestN(t *testing.T) {
	s := make([]int, 1, 3)
	s[0] = 7
	added := N(&s, 2) // within the capacity
	if len(s) != 3 || cap(s) != 3 || s[0] != 7 || len(added) != 2 || &added[0] != &s[1] {
		t.Fatalf("N within the capacity: len %d cap %d %v", len(s), cap(s), s)
	}
	added[0], added[1] = 8, 9
	added = N(&s, 5) // grows, keeping the elements
	if len(s) != 8 || s[0] != 7 || s[1] != 8 || s[2] != 9 || len(added) != 5 || &added[0] != &s[3] {
		t.Fatalf("N past the capacity: len %d %v", len(s), s)
	}
	s = s[:0]
	if added = N(&s, 0); len(s) != 0 || len(added) != 0 {
		t.Fatalf("N by 0: len %d", len(s))
	}
}
