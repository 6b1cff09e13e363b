package mrc

import (
	"testing"

	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/xrand"
)

// The mixed mode reuses EVs whose SACKs came back unmarked, once each and
// oldest first; without any it sprays in laps that visit every EV once in
// random order and pass over penalized ones, a pass taking one off the
// first penalized EV it meets. EVs on planes not in the mask are never
// offered.
func TestMixed(t *testing.T) {
	values := make([]uint32, 12) // 12 EVs on 2 planes: a lap of 16 visits
	for i := range values {
		values[i] = uint32(0xc000_0000 | i)
	}
	evs, err := evset.New(evset.Config{Planes: 2, ActivePerPlane: 6, BackupPerPlane: 0}, values)
	if err != nil {
		t.Fatal(err)
	}
	rng := xrand.New(1)
	m := newMixed(evs.Len(), rng)
	both := uint32(0b11)
	next := func(mask uint32) int {
		if s, ok := m.next(rng, evs, mask); ok {
			return int(s)
		}
		return -1
	}

	m.good(4)
	m.good(9)
	if a, b := next(both), next(both); a != 4 || b != 9 {
		t.Fatalf("reuse oldest first: %d %d, want 4 9", a, b)
	}

	// A lap of unpenalized EVs offers each of the 12 once.
	seen := map[int]int{}
	for range 12 {
		seen[next(both)]++
	}
	if len(seen) != 12 || seen[-1] != 0 {
		t.Fatalf("one lap: %v", seen)
	}

	// A loss timeout's full penalty keeps an EV out of 15 passes; an ECN
	// mark out of one.
	m.penalize(3, mixedMax)
	m.penalize(3, mixedTrim) // capped
	m.penalize(7, mixedECN)
	count := map[int]int{}
	for range 12 * 5 {
		count[next(both)]++
	}
	if count[3] != 0 {
		t.Errorf("EV 3, penalized %d, was offered %d times in 5 laps", mixedMax, count[3])
	}
	if count[7] == 0 || count[7] >= count[0] {
		t.Errorf("EV 7, one ECN mark, offered %d times against EV 0's %d", count[7], count[0])
	}
	if m.penalty[3] == 0 || m.penalty[3] == mixedMax {
		t.Errorf("passes took the penalty of EV 3 to %d", m.penalty[3])
	}

	// Plane 1 (EVs 6..11) masked out: never offered, nor when queued.
	m.good(8)
	for range 24 {
		if s := next(0b01); s >= 6 {
			t.Fatalf("offered EV %d of a masked plane", s)
		}
	}
}
