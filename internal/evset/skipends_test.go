package evset

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/openmrc/mrc/mtime"
)

// denseEnds is the table of every slot's rest end that skipEnds keeps
// only when many slots rest at once: the reference for TestSkipEnds.
type denseEnds struct {
	base mtime.Time
	end  []uint32
}

func (k *denseEnds) at(slot Slot) mtime.Time {
	if e := k.end[slot]; e != forever {
		return k.base + mtime.Time(e)
	}
	return mtime.Never
}

func (k *denseEnds) set(slot Slot, now, t mtime.Time, n int) {
	if k.end == nil {
		k.end, k.base = make([]uint32, n), now
	}
	if t == mtime.Never {
		k.end[slot] = forever
		return
	}
	if t-k.base >= mtime.Time(forever) {
		for i, e := range k.end {
			if e != forever {
				k.end[i] = uint32(max(k.base+mtime.Time(e), now) - now)
			}
		}
		k.base = now
	}
	k.end[slot] = uint32(min(t-k.base, mtime.Time(forever-1)))
}

// TestSkipEnds: the rest ends, kept as a short list while few slots rest
// and as a table once many do, read back as a table of every slot's end
// would for every resting slot, through rests that start, extend, end
// and never end, and times that move the base.
func TestSkipEnds(t *testing.T) {
	for _, c := range []struct{ n, resting int }{
		{256, 1}, {256, 4}, {256, restListMax}, {256, restListMax + 1}, {256, 64}, {256, 256},
		{2 * restListMax, 4}, {2*restListMax + 1, restListMax}, {2*restListMax + 1, 2*restListMax + 1},
	} {
		n, resting := c.n, c.resting
		r := rand.New(rand.NewPCG(uint64(resting), uint64(n)))
		evs := make([]entry, n)
		var k skipEnds
		var ref denseEnds
		now := mtime.Time(0)
		for step := range 20000 {
			if r.IntN(100) == 0 {
				now += mtime.Time(r.Uint64N(1 << 33)) // past 2^32 ns now and then
			} else {
				now += mtime.Time(r.IntN(1000))
			}
			// Rest a slot among the first `resting`, or end a rest.
			slot := Slot(r.IntN(resting))
			switch r.IntN(4) {
			case 0:
				evs[slot].state = Good
				continue
			case 1:
				evs[slot].state = Skip
				k.set(slot, now, mtime.Never, evs)
				ref.set(slot, now, mtime.Never, len(evs))
			default:
				until := now + mtime.Time(r.IntN(20000))
				if r.IntN(50) == 0 {
					until = now + mtime.Time(r.Uint64N(1<<34))
				}
				evs[slot].state = Skip
				k.set(slot, now, until, evs)
				ref.set(slot, now, until, len(evs))
			}
			for i := range evs {
				if s := Slot(i); evs[i].state == Skip && k.at(s, n) != ref.at(s) {
					t.Fatalf("%d EVs, %d resting, step %d: slot %d rests until %v, want %v", n, resting, step, s, k.at(s, n), ref.at(s))
				}
			}
		}
		if dense := len(k.end) == n; dense != (resting > restListMax || n <= 2*restListMax) {
			t.Errorf("%d EVs, %d resting: the table of every slot's end is kept: %v", n, resting, dense)
		}
	}
}

// TestSkipEndsFootprint: a set of 256 EVs of which a few rest keeps no
// end for every slot (1 KB), only those of the few.
func TestSkipEndsFootprint(t *testing.T) {
	const sets = 200
	values := make([]uint32, 256)
	for i := range values {
		values[i] = uint32(i) << 16
	}
	cfg := Config{Planes: 8, ActivePerPlane: 16, BackupPerPlane: 16}
	ss := make([]*Set, sets)
	for i := range ss {
		s, err := New(cfg, values)
		if err != nil {
			t.Fatal(err)
		}
		ss[i] = s
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, s := range ss {
		for slot := range Slot(4) {
			s.OnSkip(0, slot*16, ReasonECN)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / sets; per > 128 {
		t.Fatalf("4 rests of a 256-EV set allocate %d bytes, want at most 128", per)
	}
}
