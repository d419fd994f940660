package jsonappend

import (
	"math"
	"math/big"
	"math/bits"
	"slices"
)

// The shortest decimal of a float32 with the Schubfach method (R. Giulietti, "The Schubfach
// way to render doubles", 2020): the decimal interval of the values that round to v is
// computed with one 64x64-bit product per bound, and the shortest decimal in it (the closest
// to v among the shortest) is picked. It writes the same bytes as strconv.AppendFloat(dst,
// float64(v), 'g', -1, 32) in about a third of the time (BenchmarkFloat32), which is what the
// sample files spend most of their JSON time on.

const (
	f32Precision = 24        // significand bits, the hidden one included
	f32QMin      = -149      // exponent of the smallest subnormal
	f32CMin      = 1 << 23   // smallest normal significand
	f32CTiny     = 8         // subnormal significands below this get one more digit
	f32KMin      = -45       // smallest decimal exponent k
	f32KMax      = 31        // largest decimal exponent k
	f32TMask     = 1<<23 - 1 // trailing significand bits
	f32BQMask    = 1<<8 - 1  // biased exponent bits
	gOffset      = f32KMax   // g32[e+gOffset] holds 10^e, e = -k from -31 to 45
)

// g32[e+gOffset] is floor(10^e * 2^(125 - flog2pow10(e))) + 1 shifted right by 63 (its top 63
// bits), for the decimal exponents e = -k a float32 needs. Computed once from exact integers.
var g32 = func() (t [f32KMax - f32KMin + 1]uint64) {
	for i := range t {
		e := i - gOffset
		x := new(big.Int).Lsh(big.NewInt(1), uint(125-flog2pow10(e)+200))
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(e))), nil)
		if e >= 0 {
			x.Mul(x, p)
		} else {
			x.Quo(x, p)
		}
		x.Rsh(x, 200) // floor(10^e * 2^(125-flog2pow10(e)))
		x.Add(x, big.NewInt(1))
		x.Rsh(x, 63)
		t[i] = x.Uint64()
	}
	return t
}()

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// flog10pow2 is floor(q * log10(2)), flog10threeQuartersPow2 floor(log10(3/4 * 2^q)) and
// flog2pow10 floor(e * log2(10)), exact for the exponents used here.
func flog10pow2(q int) int { return int((int64(q) * 661_971_961_083) >> 41) }

func flog10threeQuartersPow2(q int) int {
	return int((int64(q)*661_971_961_083 - 274_743_187_321) >> 41)
}

func flog2pow10(e int) int { return int((int64(e) * 913_124_641_741) >> 38) }

// rop rounds g*cp/2^95 to odd: the top bits of the product with a sticky last bit.
func rop(g, cp uint64) uint32 {
	x1, _ := bits.Mul64(g, cp)
	vbp := x1 >> 31
	return uint32(vbp | ((x1&(1<<31-1))+(1<<31-1))>>31)
}

// shortest32 returns the shortest decimal f * 10^e that reads back as the finite, non-zero,
// positive float32 whose bits are b (f may end in zeros).
func shortest32(b uint32) (f uint32, e int) {
	t := b & f32TMask
	bq := int(b>>(f32Precision-1)) & f32BQMask
	if bq != 0 {
		mq := -f32QMin + 1 - bq
		c := uint32(f32CMin) | t
		if 0 < mq && mq < f32Precision { // an integer
			if f := c >> uint(mq); f<<uint(mq) == c {
				return f, 0
			}
		}
		return schubfach(-mq, c, 0)
	}
	return schubfach(f32QMin, t, 0)
}

func schubfach(q int, c uint32, dk int) (uint32, int) {
	out := uint64(c & 1)
	cb := uint64(c) << 2
	cbr := cb + 2
	var cbl uint64
	var k int
	if c != f32CMin || q == f32QMin {
		cbl = cb - 2
		k = flog10pow2(q)
	} else {
		cbl = cb - 1
		k = flog10threeQuartersPow2(q)
	}
	h := uint(q + flog2pow10(-k) + 33)
	g := g32[-k+gOffset] + 1
	vb := uint64(rop(g, cb<<h))
	vbl := uint64(rop(g, cbl<<h))
	vbr := uint64(rop(g, cbr<<h))
	s := vb >> 2
	if s >= 10 { // one digit fewer?
		sp10 := 10 * (s / 10)
		tp10 := sp10 + 10
		upin := vbl+out <= sp10<<2
		wpin := tp10<<2+out <= vbr
		if upin != wpin {
			if upin {
				return uint32(sp10), k
			}
			return uint32(tp10), k
		}
	}
	tt := s + 1
	uin := vbl+out <= s<<2
	win := tt<<2+out <= vbr
	if uin != win {
		if uin {
			return uint32(s), k + dk
		}
		return uint32(tt), k + dk
	}
	cmp := int64(vb) - int64((s+tt)<<1)
	// A tie goes to the even digit, but up where the spacing below v is half that above
	// (c is a power of two), as strconv does.
	if cmp < 0 || cmp == 0 && s&1 == 0 && (c != f32CMin || q == f32QMin) {
		return uint32(s), k + dk
	}
	return uint32(tt), k + dk
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendShortest32 writes a finite float32 as strconv.AppendFloat(dst, float64(v), 'g', -1,
// 32) does: the shortest digits, with an exponent (e-05, e+06) when the decimal exponent is
// below -4 or at least 6.
func appendShortest32(dst []byte, v float32) []byte {
	b := math.Float32bits(v)
	// Written in place: the longest form, -1.2345678e-38 or -0.000012345678, has 15 bytes.
	start := len(dst)
	if cap(dst)-start < 24 {
		dst = slices.Grow(dst, 24)
	}
	out := dst[start : start+24]
	o := 0
	if b>>31 != 0 {
		out[0] = '-'
		o = 1
		b &^= 1 << 31
	}
	if b == 0 {
		out[o] = '0'
		return dst[:start+o+1]
	}
	f, e := shortest32(b)
	for f%10 == 0 {
		f /= 10
		e++
	}
	// The digits of f, right-aligned in d.
	var d [10]byte
	i := len(d)
	for f >= 100 {
		r := f % 100
		f /= 100
		i -= 2
		d[i], d[i+1] = digitPairs[2*r], digitPairs[2*r+1]
	}
	if f >= 10 {
		i -= 2
		d[i], d[i+1] = digitPairs[2*f], digitPairs[2*f+1]
	} else {
		i--
		d[i] = byte('0' + f)
	}
	digits := d[i:]
	n := len(digits)
	exp := e + n - 1 // decimal exponent of the first digit
	if exp < -4 || exp >= 6 {
		out[o] = digits[0]
		o++
		if n > 1 {
			out[o] = '.'
			o++
			o += copy(out[o:], digits[1:])
		}
		out[o] = 'e'
		o++
		if exp < 0 {
			out[o] = '-'
			exp = -exp
		} else {
			out[o] = '+'
		}
		out[o+1], out[o+2] = digitPairs[2*exp], digitPairs[2*exp+1]
		return dst[:start+o+3]
	}
	dp := exp + 1 // digits before the point
	switch {
	case dp <= 0:
		out[o], out[o+1] = '0', '.'
		o += 2
		for range -dp {
			out[o] = '0'
			o++
		}
		o += copy(out[o:], digits)
	case dp >= n:
		o += copy(out[o:], digits)
		for range dp - n {
			out[o] = '0'
			o++
		}
	default:
		o += copy(out[o:], digits[:dp])
		out[o] = '.'
		o++
		o += copy(out[o:], digits[dp:])
	}
	return dst[:start+o]
}
