package mrc

import (
	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/xrand"
)

// mixed is UEC's "mixed" load balancing as htsim runs it (EVProfile.Mixed,
// docs/uec.md): REPS in its first form, where every EV whose SACK came back
// unmarked is queued to carry one more packet, and, while that queue is
// empty, a penalty bitmap sprayed in laps. A lap visits the EVs in a random
// order (the index XOR a mask drawn afresh each lap); an ECN mark adds
// mixedECN to an EV's penalty, a trim mixedTrim and a loss timeout
// mixedMax, at most mixedMax in all, and a pick passes over penalized EVs,
// taking one off the first it passes.
//
// Its state is a byte per EV and a queue of at most one entry per EV; a QP
// whose profile has no Mixed never allocates it.
type mixed struct {
	recycle []evset.Slot // a ring of EVs to reuse, oldest at head
	head, n int
	penalty []uint8 // by slot
	lap     uint32  // visits made in the current lap
	xor     uint32  // the current lap's order: slot = visit ^ xor
	mask    uint32  // the power of two above the EV count, less one
}

const (
	mixedECN  = 1  // penalty of an ECN mark (htsim's bitmap)
	mixedTrim = 4  // of a trim NACK
	mixedMax  = 15 // of a loss timeout, and the most an EV carries
)

func newMixed(evs int, rng *xrand.Rand) *mixed {
	m := &mixed{recycle: make([]evset.Slot, evs), penalty: make([]uint8, evs)}
	for m.mask+1 < uint32(evs) {
		m.mask = m.mask<<1 | 1
	}
	m.xor = rng.Uint32() & m.mask
	return m
}

// good queues slot for reuse after an unmarked SACK for a packet sent on
// it; a full queue forgets its oldest entry.
func (m *mixed) good(slot evset.Slot) {
	if m.n == len(m.recycle) {
		m.head = (m.head + 1) % len(m.recycle)
		m.n--
	}
	m.recycle[(m.head+m.n)%len(m.recycle)] = slot
	m.n++
}

// penalize adds p to slot's penalty, up to mixedMax.
func (m *mixed) penalize(slot evset.Slot, p uint8) {
	m.penalty[slot] = min(m.penalty[slot]+p, mixedMax)
}

// next returns the EV for the next data packet among the planes in mask:
// the oldest queued for reuse, else the next one without penalty in the
// lap. A queued EV whose plane is not free or up is dropped from the
// queue. After two laps without a pick it returns false, and the caller
// takes a random EV.
func (m *mixed) next(rng *xrand.Rand, evs *evset.Set, mask uint32) (evset.Slot, bool) {
	usable := func(slot evset.Slot) bool {
		plane := uint32(1) << evs.Plane(slot)
		return mask&plane != 0 && evs.Usable(plane)
	}
	for m.n > 0 {
		slot := m.recycle[m.head]
		m.head = (m.head + 1) % len(m.recycle)
		m.n--
		if usable(slot) {
			return slot, true
		}
	}
	passed := false
	for range 2 * (m.mask + 1) {
		slot := evset.Slot(m.lap ^ m.xor)
		if m.lap++; m.lap > m.mask {
			m.lap, m.xor = 0, rng.Uint32()&m.mask
		}
		switch {
		case int(slot) >= len(m.penalty) || !usable(slot):
		case m.penalty[slot] > 0:
			if !passed {
				m.penalty[slot]--
				passed = true
			}
		default:
			return slot, true
		}
	}
	return 0, false
}
