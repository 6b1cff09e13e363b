package vswitch

import (
	"math/rand/v2"
	"testing"
)

// TestTableModel checks route tables against a Go map over random puts
// (replacements included) and lookups: tables of prefixes up to 64 bits,
// which keep only their keys' high halves, and longer ones, which keep
// both.
func TestTableModel(t *testing.T) {
	for _, bits := range []int{16, 48, 64, 65, 96, 128} {
		rng := rand.New(rand.NewPCG(uint64(bits), 3))
		mask := prefixMask(bits)
		tb := table{wide: bits > 64}
		model := map[key]int32{}
		randKey := func() key {
			// Few distinct values per half, so that keys collide in one
			// half and differ in the other.
			return key{uint64(rng.IntN(40)) << 50, uint64(rng.IntN(40)) << 50}.and(mask)
		}
		for range 3000 {
			k, g := randKey(), int32(rng.IntN(1000))
			tb.put(k, g)
			model[k] = g
			q := randKey()
			got, ok := tb.get(q)
			want, wok := model[q]
			if ok != wok || got != want {
				t.Fatalf("/%d: get %x = %d %v, want %d %v", bits, q, got, ok, want, wok)
			}
		}
		if tb.n != len(model) {
			t.Fatalf("/%d: %d keys in the table, want %d", bits, tb.n, len(model))
		}
		for k, want := range model {
			if got, ok := tb.get(k); !ok || got != want {
				t.Fatalf("/%d: get %x = %d %v, want %d", bits, k, got, ok, want)
			}
		}
		if wide := tb.lo != nil; wide != (bits > 64) {
			t.Fatalf("/%d: table keeps low halves %v", bits, wide)
		}
	}
}

// TestWideRoutes: routes longer than 64 bits match on both halves of the
// destination, beside shorter ones.
func TestWideRoutes(t *testing.T) {
	s := newSwitch(t, Config{Ports: 4, Mode: ModeECMP})
	a := [16]byte{0xfd, 1, 15: 1}
	b := [16]byte{0xfd, 1, 15: 2}
	if err := s.AddRoute(a, 128, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRoute(a, 48, 2); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dst  [16]byte
		want int32
	}{{a, 0}, {b, 1}} {
		if g := s.lookup(loadKey(&c.dst)); g != c.want {
			t.Errorf("%x: group %d, want %d", c.dst, g, c.want)
		}
	}
}
