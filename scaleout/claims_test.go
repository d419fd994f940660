package scaleout

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSeqRanges(t *testing.T) {
	var s SeqRanges
	for _, q := range []uint64{5, 6, 7, 10, 9, 1, 3, 2, 7, 20, 8} {
		s.Add(q)
	}
	require.Equal(t, SeqRanges{{1, 3}, {5, 10}, {20, 20}}, s)
	for q := uint64(0); q < 25; q++ {
		require.Equal(t, (q >= 1 && q <= 3) || (q >= 5 && q <= 10) || q == 20, s.Contains(q), "seq %d", q)
	}
	back, err := ParseSeqRanges(s.Append(nil))
	require.NoError(t, err)
	require.Equal(t, s, back)
	empty, err := ParseSeqRanges(SeqRanges(nil).Append(nil))
	require.NoError(t, err)
	require.Empty(t, empty)
	for _, bad := range [][]byte{nil, {2}, {1, 5}, {1, 0x80}, {1, 2, 0, 0, 0}} {
		_, err := ParseSeqRanges(bad)
		require.Error(t, err, "%v", bad)
	}
}

// TestClaims: one drain's commit is seen by another drain of the same durable (not of another
// durable), exists once, and is released once its messages have left the stream.
func TestClaims(t *testing.T) {
	_, _, js := startRun(t, RunConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := OpenClaims(ctx, js, "c", "drain")
	require.NoError(t, err)
	other, err := OpenClaims(ctx, js, "c", "drain")
	require.NoError(t, err)
	stranger, err := OpenClaims(ctx, js, "c", "other")
	require.NoError(t, err)

	var seqs SeqRanges
	for _, q := range []uint64{3, 4, 5, 9} {
		seqs.Add(q)
	}
	require.NoError(t, a.Commit(ctx, "t1", seqs))
	require.Error(t, a.Commit(ctx, "t1", seqs), "a claim is made once")
	ok, err := other.Committed(ctx, "t1")
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, other.Claimed(4), "not read yet")
	require.NoError(t, other.Load(ctx))
	require.True(t, other.Claimed(4))
	require.True(t, other.Claimed(9))
	require.False(t, other.Claimed(6))
	require.NoError(t, stranger.Load(ctx))
	require.False(t, stranger.Claimed(4), "another durable's claims are not its own")

	n, err := a.ReleaseGone(ctx, []string{"t1"}, 9)
	require.NoError(t, err)
	require.Zero(t, n, "message 9 is still in the stream")
	n, err = a.ReleaseGone(ctx, []string{"t1", "t2"}, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ok, err = other.Committed(ctx, "t1")
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, other.Load(ctx))
	require.False(t, other.Claimed(4), "a released claim is forgotten")
}

// TestClaimsLeaveNothing: released claims leave nothing in the bucket (they used to leave a
// delete marker each, for good), the live claims stay, and OpenClaims purges the markers that
// plain deletes (drains before this) left.
func TestClaimsLeaveNothing(t *testing.T) {
	_, _, js := startRun(t, RunConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := OpenClaims(ctx, js, "c", "drain")
	require.NoError(t, err)
	values := func() uint64 {
		st, err := c.kv.Status(ctx)
		require.NoError(t, err)
		return st.Values()
	}
	for i := range 50 {
		tok := fmt.Sprintf("t%d", i)
		require.NoError(t, c.Commit(ctx, tok, SeqRanges{{uint64(i + 1), uint64(i + 1)}}))
		if i%10 != 0 {
			require.NoError(t, c.Release(ctx, tok))
		}
	}
	require.Equal(t, uint64(5), values(), "the five claims not released, and nothing else")
	tokens, err := c.Tokens(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"t0": true, "t10": true, "t20": true, "t30": true, "t40": true}, tokens)
	ok, err := c.Committed(ctx, "t11")
	require.NoError(t, err)
	require.False(t, ok, "a released claim reads as never made")

	// A drain of before left delete markers; the next OpenClaims removes them.
	for _, tok := range []string{"t0", "t10"} {
		require.NoError(t, c.kv.Delete(ctx, c.key(tok)))
	}
	require.Equal(t, uint64(5), values(), "two delete markers and three claims")
	again, err := OpenClaims(ctx, js, "c", "drain")
	require.NoError(t, err)
	require.Equal(t, uint64(3), values())
	require.NoError(t, again.Load(ctx))
	require.True(t, again.Claimed(21))
	require.False(t, again.Claimed(1))
}
