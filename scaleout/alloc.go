package scaleout

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// boundedAlloc gives Arrow's IPC reader the memory it asks for up to a budget and panics
// beyond it (Decode recovers): a compressed buffer's uncompressed size is whatever the message
// says, and a corrupt or hostile one must cost an error, not all the memory there is.
type boundedAlloc struct{ left int }

// uncompressedBudget is the most memory a message of n bytes may take uncompressed: LZ4
// cannot compress by more than about 255 to 1, so a real message never needs more than 256
// times its size.
func uncompressedBudget(n int) int { return max(256*n, 1<<20) }

func newBoundedAlloc(n int) *boundedAlloc { return &boundedAlloc{left: uncompressedBudget(n)} }

func (a *boundedAlloc) take(n int) {
	if n < 0 || n > a.left {
		panic(fmt.Sprintf("a buffer of %d bytes is more than the message can hold (%d bytes left)", n, a.left))
	}
	a.left -= n
}

func (a *boundedAlloc) Allocate(n int) []byte {
	a.take(n)
	return memory.DefaultAllocator.Allocate(n)
}

func (a *boundedAlloc) Reallocate(n int, b []byte) []byte {
	a.take(n - len(b))
	return memory.DefaultAllocator.Reallocate(n, b)
}

func (a *boundedAlloc) Free(b []byte) { memory.DefaultAllocator.Free(b) }
