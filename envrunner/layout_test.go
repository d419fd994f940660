package envrunner

import (
	"testing"
	"unsafe"
)

// TestAgentRecLayout checks that the fields a step touches fill the first cache line of an
// agent record, with the trajectory's slice header at the start of the second, and that the
// record's size is a multiple of 64 bytes (so the allocator's size class puts every record
// at the start of a line).
func TestAgentRecLayout(t *testing.T) {
	var a agentRec
	if s := unsafe.Sizeof(a); s%64 != 0 {
		t.Errorf("agentRec is %d bytes, not a multiple of 64 (adjust its padding)", s)
	}
	if end := unsafe.Offsetof(a.n) + unsafe.Sizeof(a.n); end > 64 {
		t.Errorf("the hot fields of agentRec end at byte %d, past the first cache line", end)
	}
	if off := unsafe.Offsetof(a.tr); off != 64 {
		t.Errorf("agentRec.tr is at byte %d, want 64 (the start of the second line)", off)
	}
}
