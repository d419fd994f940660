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
