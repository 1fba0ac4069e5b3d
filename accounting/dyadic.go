package accounting

import (
	"math/big"
	"strconv"
	"strings"
)

// Every float64 is a dyadic rational (an integer over a power of two), and
// so is every sum of them: the sums a budget keeps. These helpers add and
// parse such rationals exactly with shifts, where big.Rat would multiply
// denominators and reduce by a gcd; any other rational takes big.Rat's
// way. The results are the same normalised rationals.

// pow2Exp returns k when d = 2^k, and -1 otherwise.
func pow2Exp(d *big.Int) int {
	if d.Sign() <= 0 {
		return -1
	}
	k := int(d.TrailingZeroBits())
	if d.BitLen() != k+1 {
		return -1
	}
	return k
}

// addRat sets z to z + x exactly. tmp is scratch space.
func addRat(z, x *big.Rat, tmp *big.Int) {
	kz, kx := pow2Exp(z.Denom()), pow2Exp(x.Denom())
	if kz < 0 || kx < 0 || z == x {
		z.Add(z, x)
		return
	}
	k := max(kz, kx)
	num := z.Num() // a reference to z's numerator
	num.Lsh(num, uint(k-kz))
	tmp.Lsh(x.Num(), uint(k-kx))
	num.Add(num, tmp)
	s := k // reduce by the common factor of two
	if num.Sign() != 0 {
		s = min(k, int(num.TrailingZeroBits()))
	}
	num.Rsh(num, uint(s)) // exact: s trailing zeros
	z.SetInt(num)         // the denominator is now 1, and Denom a reference to it
	if k > s {
		d := z.Denom()
		d.Lsh(d, uint(k-s))
	}
}

// setRat sets z to the rational s ("3/8", "5") as big.Rat.SetString does,
// reading a normalised dyadic rational in the form RatString writes (plain
// digits, an odd numerator over a power of two) without a gcd.
func setRat(z *big.Rat, s string) bool {
	num, den, frac := strings.Cut(s, "/")
	if frac && plainDigits(num) && plainDigits(den) {
		var n, d big.Int
		setDigits(&n, num)
		setDigits(&d, den)
		if pow2Exp(&d) > 0 && n.Bit(0) == 1 {
			z.SetInt(&n)      // the denominator is now 1, and Denom a reference to it
			z.Denom().Set(&d) // n is odd: n/2^k is normalised
			return true
		}
	}
	_, ok := z.SetString(s)
	return ok
}

// setDigits sets z to the plain decimal number s, without a scanner for
// the short ones.
func setDigits(z *big.Int, s string) {
	if len(s) <= 19 {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			z.SetUint64(v)
			return
		}
	}
	z.SetString(s, 10)
}

// appendInt appends x in decimal, without a conversion buffer for the
// short ones.
func appendInt(dst []byte, x *big.Int) []byte {
	if x.IsUint64() {
		return strconv.AppendUint(dst, x.Uint64(), 10)
	}
	return x.Append(dst, 10)
}

// plainDigits reports whether s is a decimal number without sign or
// leading zero, read alike in base 10 and base 0.
func plainDigits(s string) bool {
	if s == "" || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
