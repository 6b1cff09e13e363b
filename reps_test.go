package mrc

import (
	"testing"
	"time"

	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/mtime"
)

// REPS reuses each good EV once, oldest first, and explores when it has
// none; a loss freezes it into cycling through the good ones; the thaw
// brings repsExplore random picks and an empty memory.
func TestREPS(t *testing.T) {
	var r reps
	next := func(now mtime.Time) int {
		if s, ok := r.next(now); ok {
			return int(s)
		}
		return -1
	}
	if got := next(0); got != -1 {
		t.Fatalf("an empty REPS offered %d", got)
	}
	r.good(3)
	r.good(5)
	if a, b, c := next(0), next(0), next(0); a != 3 || b != 5 || c != -1 {
		t.Fatalf("fresh once, oldest first: %d %d %d, want 3 5 -1", a, b, c)
	}
	for i := range repsRing + 2 {
		r.good(evset.Slot(10 + i))
	}
	if got := next(0); got != 12 {
		t.Fatalf("after %d goods the oldest kept is 12, got %d", repsRing+2, got)
	}

	r.lost(mtime.Time(time.Millisecond))
	seen := map[int]int{}
	for range 2 * repsRing {
		seen[next(mtime.Time(2*time.Millisecond))]++
	}
	if len(seen) != repsRing || seen[-1] != 0 {
		t.Fatalf("frozen, REPS cycles through its %d good EVs: %v", repsRing, seen)
	}
	r.lost(mtime.Time(3 * time.Millisecond)) // already frozen: no new freeze
	thaw := mtime.Time(time.Millisecond + repsFreeze + 1)
	for i := range repsExplore {
		if got := next(thaw); got != -1 {
			t.Fatalf("explore %d after the thaw offered %d", i, got)
		}
	}
	r.good(7)
	if got := next(thaw); got != 7 {
		t.Fatalf("after exploring, a new good EV is reused: got %d", got)
	}
}
