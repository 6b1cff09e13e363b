package vswitch

import "math/bits"

// table is an open-addressing hash map from masked destinations to route
// groups: a fixed-size probe sequence over flat arrays, cheaper than a Go
// map for 16-byte keys and free of pointers for the garbage collector.
// A table of prefixes of at most 64 bits (wide false), whose keys' low
// halves are all 0, keeps only the high halves: 12 bytes a slot, not 20.
type table struct {
	hi    []uint64
	lo    []uint64 // nil unless wide
	vals  []int32  // group+1; 0 marks an empty slot
	n     int
	shift uint // 64 - log2(len(hi))
	wide  bool // keys have low halves
}

func (t *table) slot(k key) uint64 {
	hi, lo := bits.Mul64(k.hi^bits.RotateLeft64(k.lo, 29)^0x2545_f491_4f6c_dd1d, 0x9e37_79b9_7f4a_7c15)
	return (hi ^ lo) >> t.shift
}

// at reports whether slot i holds k.
func (t *table) at(i uint64, k key) bool {
	return t.hi[i] == k.hi && (t.lo == nil || t.lo[i] == k.lo)
}

// get returns k's group; k's low half must be 0 unless t is wide.
func (t *table) get(k key) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.hi) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		v := t.vals[i]
		if v == 0 {
			return 0, false
		}
		if t.at(i, k) {
			return v - 1, true
		}
	}
}

// put maps k to g; k's low half must be 0 unless t is wide.
func (t *table) put(k key, g int32) {
	if 2*(t.n+1) > len(t.hi) {
		t.grow()
	}
	mask := uint64(len(t.hi) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		if t.vals[i] == 0 {
			t.hi[i], t.vals[i] = k.hi, g+1
			if t.lo != nil {
				t.lo[i] = k.lo
			}
			t.n++
			return
		}
		if t.at(i, k) {
			t.vals[i] = g + 1
			return
		}
	}
}

func (t *table) grow() {
	oldHi, oldLo, oldv := t.hi, t.lo, t.vals
	size := max(8, 2*len(oldHi))
	t.hi, t.vals, t.n = make([]uint64, size), make([]int32, size), 0
	t.lo = nil
	if t.wide {
		t.lo = make([]uint64, size)
	}
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	for i, v := range oldv {
		if v != 0 {
			k := key{hi: oldHi[i]}
			if oldLo != nil {
				k.lo = oldLo[i]
			}
			t.put(k, v-1)
		}
	}
}
