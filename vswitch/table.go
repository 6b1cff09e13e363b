package vswitch

import "math/bits"

// table is an open-addressing hash map from masked destinations to route
// groups: a fixed-size probe sequence over flat arrays, cheaper than a Go
// map for 16-byte keys and free of pointers for the garbage collector.
type table struct {
	keys  []key
	vals  []int32 // group+1; 0 marks an empty slot
	n     int
	shift uint // 64 - log2(len(keys))
}

func (t *table) slot(k key) uint64 {
	hi, lo := bits.Mul64(k.hi^bits.RotateLeft64(k.lo, 29)^0x2545_f491_4f6c_dd1d, 0x9e37_79b9_7f4a_7c15)
	return (hi ^ lo) >> t.shift
}

func (t *table) get(k key) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.keys) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		v := t.vals[i]
		if v == 0 {
			return 0, false
		}
		if t.keys[i] == k {
			return v - 1, true
		}
	}
}

func (t *table) put(k key, g int32) {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	mask := uint64(len(t.keys) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		if t.vals[i] == 0 {
			t.keys[i], t.vals[i] = k, g+1
			t.n++
			return
		}
		if t.keys[i] == k {
			t.vals[i] = g + 1
			return
		}
	}
}

func (t *table) grow() {
	old, oldv := t.keys, t.vals
	size := max(8, 2*len(old))
	t.keys, t.vals, t.n = make([]key, size), make([]int32, size), 0
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	for i, v := range oldv {
		if v != 0 {
			t.put(old[i], v-1)
		}
	}
}
