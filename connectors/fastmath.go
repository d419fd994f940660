package connectors

import "math"

// The exp and log1p of the two-logit categorical (lseTwo, lseTwoRows): z = e^-y for the gap
// y = |a-b| >= 0 between the logits, and log(1+z) for z in [0, 1]. They are written out in
// float64 arithmetic, each within a few units in the last place of math.Exp and math.Log1p
// (fastmath_test.go measures them), with none of the special cases of the whole real line,
// and in parts small enough to be inlined into lseTwoRows' loops, where math.Exp and
// math.Log are calls.
//
// They use nothing but IEEE float64 operations and bit moves, so a build gives the same
// results on every machine. The Go spec lets a compiler fuse a multiply and an add (amd64
// does with GOAMD64=v3), which can change a last bit from one build to another, but not
// from one caller to another within a build: the single-row and bulk paths share the parts.

const (
	expShift = 0x1.8p52             // (v + expShift) - expShift is v rounded to an integer, for |v| < 2^51
	ln2Hi    = 0x1.62e42fee00000p-1 // ln 2 to 32 bits: k*ln2Hi is exact for |k| < 2^21
	ln2Lo    = 0x1.a39ef35793c76p-33
	expBias  = 1023 + 60 // exponent bias + 60: 2^(60-k) is a normal float64 for every k up to 1076
	expMax   = 746       // e^-746 rounds to 0, and so does e^-y for larger y
)

// expNeg returns e^-y for y >= 0 (and NaN for NaN): 1 for y = 0, 0 for y >= 746 and +Inf,
// within 6e-16 relative of math.Exp(-y) where that is a normal float64 (the tests measure
// 5.4e-16, 2.4 units in the last place), and rounded once into the subnormal range where it
// is not. It is expNegReduce, expNegFrac and a product, the parts lseTwoRows inlines.
func expNeg(y float64) float64 {
	r, scale := expNegReduce(y)
	return expNegFrac(r) * scale
}

// expNegReduce splits y (clamped to expMax) as k*ln2 + r with k = round(y/ln2), and returns
// r (|r| <= ln2/2, give or take the rounding of y/ln2) and scale = 2^(60-k), so that
// e^-y = e^-r * 2^-60 * scale.
//
// y - k*ln2Hi is exact (k has at most 11 bits, ln2Hi 32, and the difference is within a
// factor 2 of each term), so r carries only the error of ln2Hi+ln2Lo as ln 2 (about 1e-26
// relative, times k) and the rounding of its last sum. scale is made from the bits of
// t = expShift - k: they are expShift's plus -k, and adding the bias and shifting them left
// by 52 leaves (60-k+1023) << 52, the bits of 2^(60-k), as expShift's own bits shift out.
// With the 2^60, scale is a normal float64 for every k, and the one product of expNeg
// rounds straight into the subnormal range where e^-y lies there.
func expNegReduce(y float64) (r, scale float64) {
	if y > expMax { // also +Inf; NaN goes through and makes r NaN
		y = expMax
	}
	t := expShift - y*math.Log2E
	kf := t - expShift // -k
	scale = math.Float64frombits((math.Float64bits(t) + expBias) << 52)
	return (y + kf*ln2Hi) + kf*ln2Lo, scale
}

// expNegFrac returns e^-r * 2^-60 for |r| <= ln2/2 (a little more is fine), from the
// rational form e^-r = 1 - 2r/(R(r) + r), where R(r) = r*coth(r/2) = 2 + r^2/6 - r^4/360 +
// ... is even and smooth: R is 2 + r^2*P(r^2) with P a minimax fit of degree 3 (Remez, on
// |r| <= ln2/2, weighted for the relative error of e^±r), about 2.5e-16 before rounding.
// The 2^-60 is carried in the constants (a power of 2 changes no rounding in the normal
// range) so that expNeg needs only one more product.
func expNegFrac(r float64) float64 {
	w := r * r
	big := 2 + w*(0.1666666666657338794+w*(-0.0027777777147582377787+w*(0.000066136153950288561641+w*-1.6405184285052139442e-6)))
	return 0x1p-60 - r*0x1p-59/(big+r)
}

// fastLog1p returns log(1+z) for z in [0, 1] (and NaN for NaN): 0 for 0, z itself for
// z < 2^-53 (subnormal z included), and within 5e-16 relative of math.Log1p(z) (the tests
// measure 4.4e-16, 2 units in the last place). It is log1pReduce, log1pHi and log1pPoly,
// the parts lseTwoRows inlines.
func fastLog1p(z float64) float64 {
	s, mask := log1pReduce(z)
	return log1pHi(mask) + log1pPoly(s)
}

// log1pReduce writes log(1+z) = log(1+c) + log((1+z)/(1+c)) with c = 0 for z < 1/3 and
// c = 1/2 above, and returns s = 2(z-c)/(2+z+c), for which log((1+z)/(1+c)) = 2 atanh(s/2),
// with |s| <= 2/7, and mask, all ones where c = 1/2 and 0 where c = 0 (for log1pHi).
//
// z - c is exact (where c = 1/2, z is within a factor 2 of it), so the rounding of 2+z+c
// and the division's are the only errors in s, and s = z exactly for z < 2^-53. c, 2+c and
// log(1+c) are chosen by masking bit patterns: the side of 1/3 that z falls on goes either
// way at random for a policy that is unsure, and a branch on it would be mispredicted.
func log1pReduce(z float64) (s float64, mask uint64) {
	if z >= 1.0/3 { // a conditional move, not a branch
		mask = 1<<64 - 1
	}
	c := math.Float64frombits(mask & 0x3fe0000000000000)                    // 1/2 or 0
	d := math.Float64frombits(0x4000000000000000 | mask&0x0004000000000000) // 2.5 or 2: 2 + c
	num := z - c
	return (num + num) / (z + d), mask
}

// log1pHi returns log(1+c) for log1pReduce's mask: log(1.5) or 0.
func log1pHi(mask uint64) float64 {
	return math.Float64frombits(mask & 0x3fd9f323ecbf984c)
}

// log1pPoly returns 2 atanh(s/2) = s + s^3/12 + s^5/80 + ... for |s| <= 2/7, as
// s + s*v*Q(v) with v = s^2 and Q a minimax fit of degree 5 (Remez, on v <= 4/49, weighted
// for the relative error of the sum), about 1.5e-17 before rounding.
func log1pPoly(s float64) float64 {
	v := s * s
	v2 := v * v
	return s + s*v*((0.083333333333322662574+v*0.012500000002536017453)+v2*(0.002232142656602477081+v*0.00043403505934859242469)+
		v2*v2*(0.000088645079679954407339+v*0.000019973334164691755206))
}
