// Package calc is a small library with two bugs, for the trim corpus.
package calc

// Add returns a+b.
func Add(a, b int) int { return a + b }

// Mul returns a*b, except that it gets negative numbers wrong.
func Mul(a, b int) int {
	if a < 0 {
		return -a * b
	}
	return a * b
}

// Clamp keeps v within lo..hi, but forgets hi.
func Clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	return v
}
