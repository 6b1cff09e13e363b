package mrc

import (
	"time"

	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/mtime"
)

// REPS (recycled entropies packet spraying) is UEC's load balancing as
// htsim runs it, for the uec baseline (EVProfile.REPS, docs/uec.md): a
// data packet reuses an EV whose SACK came back unmarked, each such EV
// once; with none to reuse it explores, taking a random active EV. An EV
// that saw ECN or a trim is not recycled, so the spraying drifts away
// from congested paths without EV states. After a loss timeout REPS
// freezes: it keeps cycling through the EVs it knows are good without
// exploring, until repsFreeze has passed.
//
// Its state is a few bytes per QP; a QP whose profile has no REPS never
// touches it.
type reps struct {
	ring    [repsRing]evset.Slot // the last good EVs, oldest first from head
	head, n uint8
	fresh   uint8 // the newest fresh entries of the ring have not been reused
	cursor  uint8 // frozen: the next entry to reuse, round and round
	frozen  bool
	thawAt  mtime.Time
	// explores is how many random picks are still owed after a freeze.
	explores uint8
}

const (
	// repsRing is how many good EVs REPS remembers (htsim's default
	// buffer of 8).
	repsRing = 8
	// repsFreeze is how long a loss timeout freezes exploration (htsim's
	// exit_freeze_after, 10 ms), and repsExplore how many random picks
	// follow a freeze (htsim's 16).
	repsFreeze  = 10 * time.Millisecond
	repsExplore = 16
)

// good records that a SACK for a packet sent on slot came back unmarked.
func (r *reps) good(slot evset.Slot) {
	if r.n == repsRing {
		r.head = (r.head + 1) % repsRing // the oldest makes room
		r.n--
	}
	r.ring[(int(r.head)+int(r.n))%repsRing] = slot
	r.n++
	r.fresh = min(r.fresh+1, r.n)
}

// lost freezes REPS after a loss timeout, unless it is frozen or still
// exploring after the last freeze.
func (r *reps) lost(now mtime.Time) {
	if !r.frozen && r.explores == 0 {
		r.frozen, r.thawAt, r.cursor = true, now.Add(repsFreeze), 0
	}
}

// next returns the EV for the next data packet: the oldest fresh good EV,
// or frozen the next good one round the ring. ok is false when REPS has
// none to offer and the caller explores (a random pick).
func (r *reps) next(now mtime.Time) (slot evset.Slot, ok bool) {
	if r.frozen && now > r.thawAt {
		*r = reps{explores: repsExplore}
	}
	switch {
	case r.explores > 0:
		r.explores--
		return 0, false
	case r.frozen && r.n > 0:
		slot = r.ring[(int(r.head)+int(r.cursor%r.n))%repsRing]
		r.cursor++
	case !r.frozen && r.fresh > 0:
		slot = r.ring[(int(r.head)+int(r.n-r.fresh))%repsRing]
		r.fresh--
	default:
		return 0, false
	}
	return slot, true
}
