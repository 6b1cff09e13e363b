// Package xrand is the core's random source: a small, fast, seeded
// generator (wyrand) whose methods inline, for the per-packet EV choice.
// It is deterministic for a seed and not safe for concurrent use.
package xrand

import "math/bits"

// Rand is a wyrand generator. The zero value is a valid generator with
// seed 0.
type Rand struct{ s uint64 }

// New returns a generator seeded with seed.
func New(seed uint64) *Rand { return &Rand{s: seed} }

// Uint64 returns a pseudo-random 64-bit value.
func (r *Rand) Uint64() uint64 {
	r.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// Uint32 returns a pseudo-random 32-bit value.
func (r *Rand) Uint32() uint32 { return uint32(r.Uint64()) }

// IntN returns a value in [0, n) for 0 < n < 2^32 by multiply-shift
// (Lemire). The bias, under n/2^32, is immaterial for path choice.
func (r *Rand) IntN(n int) int {
	return int((uint64(uint32(r.Uint64())) * uint64(n)) >> 32)
}
