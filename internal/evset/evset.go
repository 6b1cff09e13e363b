// Package evset is the per-QP table of entropy values (EVs) and their path
// states (digest §3.4–3.5): which EVs a QP sprays over, which are resting
// (SKIP), which are retired (ASSUMED_BAD) and being probed, and which the
// controller denied.
//
// The set is split evenly across planes. Each plane has an active list (the
// EVs packets are sprayed over) and a backup list; an EV that is retired is
// replaced from the same plane's backups, and an EV that probes bring back
// becomes a backup again, so planes stay equally loaded (digest §3.13).
package evset

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/openmrc/mrc/internal/xrand"
	"github.com/openmrc/mrc/mtime"
)

// State is the path state of one EV (digest §3.4, spec Figure 5).
type State uint8

const (
	// Good EVs carry data.
	Good State = iota
	// Skip EVs are resting after an ECN mark or a mid-fabric trim; they
	// return to Good after Config.Skip.
	Skip
	// AssumedBad EVs lost a packet without a trim (or were told
	// ALWAYS_SKIP); they carry only probes until enough probes succeed.
	AssumedBad
	// Denied EVs were disabled by the controller and never recover on
	// their own.
	Denied
)

func (s State) String() string {
	switch s {
	case Good:
		return "GOOD"
	case Skip:
		return "SKIP"
	case AssumedBad:
		return "ASSUMED_BAD"
	case Denied:
		return "DENIED"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Reason says why an EV changed state.
type Reason uint8

const (
	ReasonECN        Reason = iota // SACK with M=SKIP_ONCE
	ReasonTrim                     // NACK TRIMMED (mid-fabric)
	ReasonLoss                     // untrimmed loss: the per-packet timer expired
	ReasonAlwaysSkip               // SACK with M=ALWAYS_SKIP
	ReasonSkipEnded                // the SKIP period ran out
	ReasonProbes                   // enough probes succeeded
	ReasonAdmin                    // the controller denied or allowed it
	ReasonSuspect                  // a packet's loss timer expired: resting while a probe asks
	ReasonDoubt                    // another QP lost a packet on the same path: resting while a probe asks
)

func (r Reason) String() string {
	switch r {
	case ReasonECN:
		return "ecn"
	case ReasonTrim:
		return "trim"
	case ReasonLoss:
		return "loss"
	case ReasonAlwaysSkip:
		return "always-skip"
	case ReasonSkipEnded:
		return "skip-ended"
	case ReasonProbes:
		return "probes"
	case ReasonAdmin:
		return "admin"
	case ReasonSuspect:
		return "suspect"
	case ReasonDoubt:
		return "doubt"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Slot indexes one EV in a Set.
type Slot uint16

// MaxEVs is the largest number of EVs in a Set.
const MaxEVs = 1 << 14

// Transition is one state change, reported through Set.Notify.
type Transition struct {
	Slot     Slot
	EV       uint32
	Plane    int
	From, To State
	Reason   Reason
	// Replacement is the backup promoted to active in the same plane when
	// an active EV left service, or -1.
	Replacement int
}

// Config sizes a Set and sets its timings. The zero value of a field means
// the default named in its comment (docs/spec-gaps.md).
type Config struct {
	Planes         int // network planes, one NIC port each (1..32)
	ActivePerPlane int // EVs sprayed over per plane (default 16: 128 on 8 planes)
	BackupPerPlane int // spare EVs per plane (0: none)
	// MinActive is the floor on active Good/Skip EVs across all planes
	// (ev_min_active): a loss that would take the QP below it leaves the
	// EV in service. Default: a quarter of all active EVs.
	MinActive int
	// Skip is how long an EV rests after ECN or a trim (default 10 µs,
	// about one base RTT in a two-tier fabric).
	Skip time.Duration
	// ProbeInterval is the wait before the first probe of a retired EV and
	// between successful probes (default 100 µs); it doubles after every
	// failed probe up to ProbeIntervalMax (default 10 ms).
	ProbeInterval    time.Duration
	ProbeIntervalMax time.Duration
	// ProbeTimeout is how long a probe may go unanswered before it counts
	// as failed (default 100 µs).
	ProbeTimeout time.Duration
	// ProbeSuccesses is the number of consecutive successful probes that
	// resurrects a retired EV (default 3).
	ProbeSuccesses int
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Planes == 0 {
		c.Planes = 1
	}
	if c.ActivePerPlane == 0 {
		c.ActivePerPlane = 16
	}
	if c.MinActive == 0 {
		c.MinActive = max(1, c.Planes*c.ActivePerPlane/4)
	}
	if c.Skip == 0 {
		c.Skip = 10 * time.Microsecond
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = 100 * time.Microsecond
	}
	if c.ProbeIntervalMax == 0 {
		c.ProbeIntervalMax = 10 * time.Millisecond
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = 100 * time.Microsecond
	}
	if c.ProbeSuccesses == 0 {
		c.ProbeSuccesses = 3
	}
	return c
}

// Validate reports a configuration the set cannot run with.
func (c Config) Validate() error {
	switch {
	case c.Planes < 1 || c.Planes > 32:
		return fmt.Errorf("planes = %d, want 1..32", c.Planes)
	case c.ActivePerPlane < 1:
		return fmt.Errorf("active EVs per plane = %d, want at least 1", c.ActivePerPlane)
	case c.BackupPerPlane < 0:
		return fmt.Errorf("backup EVs per plane = %d, want at least 0", c.BackupPerPlane)
	case (c.ActivePerPlane+c.BackupPerPlane)*c.Planes > MaxEVs:
		return fmt.Errorf("%d EVs in all is too many", (c.ActivePerPlane+c.BackupPerPlane)*c.Planes)
	case c.MinActive < 1 || c.MinActive > c.Planes*c.ActivePerPlane:
		return fmt.Errorf("min active EVs = %d, want 1..%d", c.MinActive, c.Planes*c.ActivePerPlane)
	case c.Skip < 0 || c.ProbeInterval <= 0 || c.ProbeIntervalMax < c.ProbeInterval || c.ProbeTimeout <= 0:
		return fmt.Errorf("EV timings must be positive (skip %v, probe interval %v..%v, probe timeout %v)",
			c.Skip, c.ProbeInterval, c.ProbeIntervalMax, c.ProbeTimeout)
	case c.ProbeSuccesses < 1:
		return fmt.Errorf("probe successes = %d, want at least 1", c.ProbeSuccesses)
	}
	return nil
}

// entry is one EV's state: 6 bytes, since a large simulation holds
// hundreds of thousands of QPs with hundreds of EVs each. When its rest
// ends lives apart (Set.skipUntil), allocated on the first rest; so does
// the top half of its value, unless the set's values number their slots
// there (Set.hi).
type entry struct {
	lo    uint16 // the value's low 16 bits
	plane uint8  // slot / per, kept to spare a division
	state State
	pos   int16 // index in its plane's active list, or -1
}

// probe is the probing state of one retired (AssumedBad) EV.
type probe struct {
	slot     Slot
	lead     Slot          // the EV whose probe answers for this one (Doubt, Follow): itself, or the lead
	awaiting bool          // a probe is in flight
	ok       uint8         // consecutive successes
	every    time.Duration // current interval (backs off on failure)
	at       mtime.Time    // next probe due (when not awaiting)
	by       mtime.Time    // deadline of the probe in flight (when awaiting)
}

// plane counts the EVs in a plane's two lists, which live in Set.lists.
type plane struct {
	nActive uint16 // EVs in service
	nBackup uint16 // Good EVs not in service
	up      bool
}

// Set is one QP's EV table. It is not safe for concurrent use.
type Set struct {
	cfg Config
	per int     // EVs per plane: plane p holds slots p*per..p*per+per-1
	evs []entry // by slot
	// The top 16 bits of each slot's value: hi[slot], or hiBase+slot when
	// hi is nil (the values number their slots there, as the core's EVs
	// do: wire.NewEV).
	hi        []uint16
	hiBase    uint16
	skipUntil skipEnds // by slot: when a Skip rest ends
	// lists holds each plane's active and backup lists in one region of
	// per slots, plane p's from p*per: the active list fills the region
	// from its front, the backup list (a stack) from its back, its top
	// the lowest. An EV is in at most one list of its plane, so the two
	// never meet.
	lists   []Slot
	planes  []plane
	retired []probe // AssumedBad EVs, probed in the background
	doubts  []probe // doubted EVs (Doubt), each awaiting one probe's answer
	nActive int     // active EVs that are Good or Skip, on up planes or not
	rr      int     // plane round-robin cursor

	// The planes on which a listed probe is due (dueMask): those of the
	// probes awaiting no answer whose time had come at dueAt, good until
	// dueUntil (the next probe time after dueAt) or until either list
	// changes (dueStale). A QP that waits for a port is asked on every
	// port's turn whether it has a probe to send; with many EVs retired
	// or doubted, scanning both lists each time was half of the default
	// scenario's MRC run.
	due      uint32
	dueStale bool
	dueAt    mtime.Time
	dueUntil mtime.Time

	// Notify, when set, is called for every state change.
	Notify func(Transition)
}

// New returns a set over values, which holds Planes×(Active+Backup) EVs:
// values[p*(Active+Backup)+i] is EV i of plane p, the first ActivePerPlane
// of each plane active. Every plane starts up. Values must be distinct.
func New(cfg Config, values []uint32) (*Set, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	per := cfg.ActivePerPlane + cfg.BackupPerPlane
	if len(values) != cfg.Planes*per {
		return nil, fmt.Errorf("evset: %d values for %d planes × %d EVs", len(values), cfg.Planes, per)
	}
	s := &Set{
		cfg:      cfg,
		per:      per,
		evs:      make([]entry, len(values)),
		lists:    make([]Slot, len(values)),
		planes:   make([]plane, cfg.Planes),
		dueStale: true,
	}
	for p := range s.planes {
		s.planes[p].up = true
	}
	s.hiBase = uint16(values[0] >> 16)
	for i, v := range values {
		if uint16(v>>16) != s.hiBase+uint16(i) {
			// Values that number their slots differ in their top
			// halves (at most MaxEVs of them); others may repeat.
			if v, ok := repeated(values); ok {
				return nil, fmt.Errorf("evset: EV %#08x appears twice", v)
			}
			s.hi = make([]uint16, len(values))
			for j, v := range values {
				s.hi[j] = uint16(v >> 16)
			}
			break
		}
	}
	for i, v := range values {
		slot := Slot(i)
		s.evs[i] = entry{lo: uint16(v), plane: uint8(i / per), pos: -1}
		if i%per < cfg.ActivePerPlane {
			s.activate(slot)
		} else {
			s.pushBackup(slot)
		}
	}
	return s, nil
}

// repeated returns the smallest value that appears more than once in
// values, if one does.
func repeated(values []uint32) (uint32, bool) {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return sorted[i], true
		}
	}
	return 0, false
}

// Config returns the set's configuration with defaults applied.
func (s *Set) Config() Config { return s.cfg }

// Len returns the number of EVs in the set.
func (s *Set) Len() int { return len(s.evs) }

// Value returns the EV value in slot.
func (s *Set) Value(slot Slot) uint32 {
	hi := s.hiBase + uint16(slot)
	if s.hi != nil {
		hi = s.hi[slot]
	}
	return uint32(hi)<<16 | uint32(s.evs[slot].lo)
}

// Plane returns the plane of the EV in slot.
func (s *Set) Plane(slot Slot) int { return int(s.evs[slot].plane) }

// State returns the state of the EV in slot at time now.
func (s *Set) State(slot Slot, now mtime.Time) State {
	e := &s.evs[slot]
	if e.state == Skip && now >= s.restEnd(slot) {
		return Good
	}
	return e.state
}

// PlaneSlots returns the slots of plane p's EVs: from lo up to, not
// including, hi.
func (s *Set) PlaneSlots(p int) (lo, hi Slot) { return Slot(p * s.per), Slot((p + 1) * s.per) }

// Active reports whether the EV in slot is in its plane's active list.
func (s *Set) Active(slot Slot) bool { return s.evs[slot].pos >= 0 }

// Counts returns how many EVs are in each state at time now.
func (s *Set) Counts(now mtime.Time) (counts [4]int) {
	for i := range s.evs {
		counts[s.State(Slot(i), now)]++
	}
	return counts
}

// ActiveInPlane returns the number of active EVs in plane p.
func (s *Set) ActiveInPlane(p int) int { return int(s.planes[p].nActive) }

// active returns plane p's active list (in Set.lists).
func (s *Set) active(p int) []Slot {
	base := p * s.per
	return s.lists[base : base+int(s.planes[p].nActive)]
}

// backup returns entry i of plane p's backup stack, 0 the bottom.
func (s *Set) backup(p, i int) Slot { return s.lists[(p+1)*s.per-1-i] }

func (s *Set) activate(slot Slot) {
	p := s.Plane(slot)
	pl := &s.planes[p]
	s.evs[slot].pos = int16(pl.nActive)
	s.lists[p*s.per+int(pl.nActive)] = slot
	pl.nActive++
	s.nActive++
}

// deactivate removes slot from its plane's active list and promotes a
// backup in its place. It returns the promoted slot or -1.
func (s *Set) deactivate(slot Slot) int {
	e := &s.evs[slot]
	p := s.Plane(slot)
	active := s.active(p)
	last := active[len(active)-1]
	active[e.pos] = last
	s.evs[last].pos = e.pos
	s.planes[p].nActive--
	e.pos = -1
	s.nActive--
	if s.planes[p].nBackup > 0 {
		b := s.popBackup(p)
		s.activate(b)
		return int(b)
	}
	return -1
}

// pushBackup puts slot on top of its plane's backup stack.
func (s *Set) pushBackup(slot Slot) {
	p := s.Plane(slot)
	s.lists[(p+1)*s.per-1-int(s.planes[p].nBackup)] = slot
	s.planes[p].nBackup++
}

// popBackup takes the top of plane p's backup stack, which is not empty.
func (s *Set) popBackup(p int) Slot {
	s.planes[p].nBackup--
	return s.backup(p, int(s.planes[p].nBackup))
}

// restore puts a recovered EV back into service: active if its plane is
// short of ActivePerPlane, otherwise a backup.
func (s *Set) restore(slot Slot) {
	if int(s.planes[s.Plane(slot)].nActive) < s.cfg.ActivePerPlane {
		s.activate(slot)
	} else {
		s.pushBackup(slot)
	}
}

// rest puts the EV in slot in Skip from now until the given time.
func (s *Set) rest(slot Slot, now, until mtime.Time) {
	s.evs[slot].state = Skip
	s.restUntil(slot, now, until)
}

// restEnd returns when the rest of the EV in slot, which rests (Skip),
// ends: mtime.Never for a rest with no end.
func (s *Set) restEnd(slot Slot) mtime.Time { return s.skipUntil.at(slot, len(s.evs)) }

// restUntil makes the rest of the EV in slot, which rests, end at t
// (mtime.Never: no end); now is when.
func (s *Set) restUntil(slot Slot, now, t mtime.Time) { s.skipUntil.set(slot, now, t, s.evs) }

// skipEnds holds when each resting (Skip) slot's rest ends, in
// nanoseconds after base (forever: no end): 4 bytes where a time takes
// 8. Few EVs of a set rest at once, so the ends start, at the first
// rest, as a short list of (slot, end) pairs, one per slot that rested
// (those that rest no more are dropped when it fills), and become a
// table of every slot's end only when more than restListMax slots rest
// at once: 1 KB for the 256 EVs of a QP of --preset big, where most
// QPs rest a few. A set of at most 2×restListMax EVs keeps the table
// from the first rest. Both live in end: the table is n long (n: the
// set's EVs), the list, pairs of slot and end, shorter. An end beyond
// 2^32 ns of base moves base up to now, and every end before the new
// base (all of them past) to it; a rest longer than 2^32-2 ns (4.3 s,
// where Config.Skip is about a round trip) ends then.
type skipEnds struct {
	base mtime.Time
	end  []uint32
}

const (
	forever       = ^uint32(0)
	restListStart = 4
	restListMax   = 16
)

// at returns when slot's rest ends; it rests, and the set has n EVs.
func (k *skipEnds) at(slot Slot, n int) mtime.Time {
	if e := k.get(slot, n); e != forever {
		return k.base + mtime.Time(e)
	}
	return mtime.Never
}

func (k *skipEnds) get(slot Slot, n int) uint32 {
	if i, ok := k.find(slot, n); ok {
		return k.end[i]
	}
	return 0
}

// find returns where in end slot's end is kept, if it is, the set
// having n EVs.
func (k *skipEnds) find(slot Slot, n int) (int, bool) {
	if len(k.end) == n {
		return int(slot), true
	}
	for i := 0; i < len(k.end); i += 2 {
		if k.end[i] == uint32(slot) {
			return i + 1, true
		}
	}
	return 0, false
}

// set records that slot, which rests, rests until t (mtime.Never: no
// end); now is when, and evs the set's entries.
func (k *skipEnds) set(slot Slot, now, t mtime.Time, evs []entry) {
	if k.end == nil {
		k.base = now
	}
	e := k.ref(slot, evs)
	if t == mtime.Never {
		*e = forever
		return
	}
	if t-k.base >= mtime.Time(forever) {
		i, step := 0, 1 // the table's ends, or the list's
		if len(k.end) != len(evs) {
			i, step = 1, 2
		}
		for ; i < len(k.end); i += step {
			if e := k.end[i]; e != forever {
				k.end[i] = uint32(max(k.base+mtime.Time(e), now) - now)
			}
		}
		k.base = now
	}
	*e = uint32(min(t-k.base, mtime.Time(forever-1)))
}

// ref returns where slot's end is kept, making room for it: in the
// list while it has room once the slots that rest no more are dropped,
// else in the table of every slot's end, which takes over for good.
func (k *skipEnds) ref(slot Slot, evs []entry) *uint32 {
	n := len(evs)
	if i, ok := k.find(slot, n); ok {
		return &k.end[i]
	}
	if len(k.end) == 2*restListMax {
		kept := k.end[:0]
		for i := 0; i < len(k.end); i += 2 {
			if evs[k.end[i]].state == Skip {
				kept = append(kept, k.end[i], k.end[i+1])
			}
		}
		k.end = kept
	}
	switch {
	case n <= 2*restListMax:
		k.end = make([]uint32, n)
	case len(k.end) < 2*restListMax:
		if k.end == nil {
			k.end = make([]uint32, 0, 2*restListStart)
		}
		k.end = append(k.end, uint32(slot), 0)
		return &k.end[len(k.end)-1]
	default:
		table := make([]uint32, n)
		for i := 0; i < len(k.end); i += 2 {
			table[k.end[i]] = k.end[i+1]
		}
		k.end = table
	}
	return &k.end[slot]
}

func (s *Set) notify(slot Slot, from, to State, why Reason, repl int) {
	if s.Notify != nil {
		s.Notify(Transition{Slot: slot, EV: s.Value(slot), Plane: s.Plane(slot), From: from, To: to, Reason: why, Replacement: repl})
	}
}

// SetPlaneUp marks plane p usable or not (its local or remote port went up
// or down). EVs keep their states; a down plane is simply not picked.
func (s *Set) SetPlaneUp(p int, up bool) { s.planes[p].up = up }

// PlaneUp reports whether plane p is usable.
func (s *Set) PlaneUp(p int) bool { return s.planes[p].up }

// Pick chooses the EV for the next packet (digest §3.4, "pseudo-random
// selection"): planes are taken round-robin among those in mask (bit p =
// plane p may send now) that are up and have active EVs; within the plane
// the EV is drawn uniformly from the active list, avoiding EVs in Skip.
// When every candidate rests in Skip, a Skip EV is used rather than
// stalling. ok is false when no plane in mask can send.
func (s *Set) Pick(now mtime.Time, mask uint32, r *xrand.Rand) (slot Slot, ok bool) {
	n := len(s.planes)
	var fallback Slot
	haveFallback := false
	// p runs from s.rr round the planes; wrapping by comparison, not %:
	// an integer division on every packet costs more than the rest of
	// the loop.
	for i, p := 0, s.rr; i < n; i, p = i+1, wrap(p+1, n) {
		pl := &s.planes[p]
		if mask&(1<<p) == 0 || !pl.up || pl.nActive == 0 {
			continue
		}
		active := s.active(p)
		if slot, ok := s.pickInPlane(active, now, r); ok {
			s.rr = wrap(p+1, n)
			return slot, true
		}
		if !haveFallback {
			fallback = active[r.IntN(len(active))]
			haveFallback = true
			s.rr = wrap(p+1, n)
		}
	}
	return fallback, haveFallback
}

// pickInPlane draws a non-resting EV from a plane's active list: a few
// random draws, then a scan from a random start.
func (s *Set) pickInPlane(active []Slot, now mtime.Time, r *xrand.Rand) (Slot, bool) {
	n := len(active)
	for range 3 {
		slot := active[r.IntN(n)]
		if s.settle(slot, now) == Good {
			return slot, true
		}
	}
	for i, j := 0, r.IntN(n); i < n; i, j = i+1, wrap(j+1, n) {
		slot := active[j]
		if s.settle(slot, now) == Good {
			return slot, true
		}
	}
	return 0, false
}

// wrap returns i modulo n for i in [0, 2n).
func wrap(i, n int) int {
	if i >= n {
		i -= n
	}
	return i
}

// settle ends an expired Skip and returns the EV's state.
func (s *Set) settle(slot Slot, now mtime.Time) State {
	e := &s.evs[slot]
	if e.state == Skip && now >= s.restEnd(slot) {
		e.state = Good
		s.notify(slot, Skip, Good, ReasonSkipEnded, -1)
	}
	return e.state
}

// OnSkip rests a Good EV for Config.Skip: the forward path was ECN-marked
// (SACK M=SKIP_ONCE, why=ReasonECN) or the packet was trimmed mid-fabric
// (NACK TRIMMED, why=ReasonTrim). A resting EV's rest is extended; other
// states are unaffected.
func (s *Set) OnSkip(now mtime.Time, slot Slot, why Reason) {
	switch s.settle(slot, now) {
	case Good:
		s.rest(slot, now, now.Add(s.cfg.Skip))
		s.notify(slot, Good, Skip, why, -1)
	case Skip:
		s.restUntil(slot, now, max(s.restEnd(slot), now.Add(s.cfg.Skip))) // a suspect rests on
	}
}

// Suspect rests a Good or Skip EV with no end (state Skip, which the
// controller API does not report) while the caller finds out whether a
// packet it carried was lost; Unsuspect or OnBad ends the rest. It
// reports whether the EV now rests so.
func (s *Set) Suspect(now mtime.Time, slot Slot) bool {
	switch s.settle(slot, now) {
	case Good:
		s.rest(slot, now, mtime.Never)
		s.notify(slot, Good, Skip, ReasonSuspect, -1)
		return true
	case Skip:
		s.restUntil(slot, now, mtime.Never)
		return true
	}
	return false
}

// Unsuspect ends the rest Suspect (or Doubt) began: the EV is Good
// again, and no longer doubted.
func (s *Set) Unsuspect(now mtime.Time, slot Slot) {
	if s.evs[slot].state == Skip && s.restEnd(slot) == mtime.Never {
		s.removeDoubt(now, slot)
		s.restUntil(slot, now, now)
		s.settle(slot, now)
	}
}

// Doubt rests the Good or Skip EVs among slots with no end, as Suspect
// does, while one probe asks whether the path they share works: another
// QP of the endpoint lost a packet on it. The first of them doubted leads:
// its probe falls due at now, and speaks for all. The first probe answer
// over any of them (OnProbeResponse) ends the rest of all; a probe that
// goes unanswered for ProbeTimeout makes ExpireProbes report all of them,
// still resting, for the caller to retire (OnBad) or release
// (Unsuspect). Suspect, retired, denied or already doubted EVs are left
// alone. It reports how many EVs it doubted.
func (s *Set) Doubt(now mtime.Time, slots []Slot) int {
	n, lead := 0, Slot(0)
	for _, slot := range slots {
		from := s.settle(slot, now)
		if from != Good && from != Skip || s.doubtIndex(slot) >= 0 ||
			from == Skip && s.restEnd(slot) == mtime.Never { // a suspect: its own probe asks
			continue
		}
		s.rest(slot, now, mtime.Never)
		d := probe{slot: slot, lead: slot, at: now}
		if n > 0 {
			d.lead, d.at = lead, mtime.Never // never due: the lead's probe answers
		}
		lead = d.lead
		s.doubts = append(s.doubts, d)
		s.dueStale = true
		s.notify(slot, from, Skip, ReasonDoubt, -1)
		n++
	}
	return n
}

func (s *Set) doubtIndex(slot Slot) int {
	for i := range s.doubts {
		if s.doubts[i].slot == slot {
			return i
		}
	}
	return -1
}

// removeDoubt stops doubting slot.
func (s *Set) removeDoubt(now mtime.Time, slot Slot) {
	if i := s.doubtIndex(slot); i >= 0 {
		s.doubts = s.unlist(now, s.doubts, i)
	}
}

// unlist removes entry i from list, a list of probes, and returns it. The
// entries entry i led follow the first of them from now on, whose probe
// falls due at now, at the first interval.
func (s *Set) unlist(now mtime.Time, list []probe, i int) []probe {
	s.dueStale = true
	slot := list[i].slot
	list = append(list[:i], list[i+1:]...)
	next := -1
	for j := range list {
		if pr := &list[j]; pr.lead == slot {
			if next < 0 {
				next = j
				pr.every, pr.at = s.cfg.ProbeInterval, now
			}
			pr.lead = list[next].slot
		}
	}
	return list
}

// takeDoubts removes the doubts led by lead and appends their slots to
// out.
func (s *Set) takeDoubts(lead Slot, out []Slot) []Slot {
	s.dueStale = true
	kept := s.doubts[:0]
	for _, d := range s.doubts {
		if d.lead == lead {
			out = append(out, d.slot)
		} else {
			kept = append(kept, d)
		}
	}
	s.doubts = kept
	return out
}

// OnBad retires an EV after an untrimmed loss (why=ReasonLoss) or a SACK
// with M=ALWAYS_SKIP (why=ReasonAlwaysSkip): it leaves service, a backup
// of its plane takes its place, and probes start after ProbeInterval. It
// reports whether the EV was retired; it is not when it was already
// retired or denied, or when retiring it would leave fewer than MinActive
// EVs in service.
func (s *Set) OnBad(now mtime.Time, slot Slot, why Reason) bool {
	e := &s.evs[slot]
	from := s.settle(slot, now)
	if from != Good && from != Skip {
		return false
	}
	repl := -1
	if e.pos >= 0 {
		if s.nActive <= s.cfg.MinActive && s.planes[s.Plane(slot)].nBackup == 0 {
			return false
		}
		repl = s.deactivate(slot)
	} else {
		s.removeBackup(slot)
	}
	s.removeDoubt(now, slot)
	e.state = AssumedBad
	s.retired = append(s.retired, probe{slot: slot, lead: slot, every: s.cfg.ProbeInterval, at: now.Add(s.cfg.ProbeInterval)})
	s.dueStale = true
	s.notify(slot, from, AssumedBad, why, repl)
	return true
}

// removeBackup takes slot out of its plane's backup stack, keeping the
// order of the rest.
func (s *Set) removeBackup(slot Slot) {
	p := s.Plane(slot)
	pl := &s.planes[p]
	// The stack runs down from the region's end: entry i at top-i.
	top := (p+1)*s.per - 1
	for i := range int(pl.nBackup) {
		if s.lists[top-i] == slot {
			n := int(pl.nBackup)
			copy(s.lists[top-n+2:top-i+1], s.lists[top-n+1:top-i])
			pl.nBackup--
			return
		}
	}
}

// removeRetired takes slot off the retired list.
func (s *Set) removeRetired(now mtime.Time, slot Slot) {
	if i := s.retiredIndex(slot); i >= 0 {
		s.retired = s.unlist(now, s.retired, i)
	}
}

// Follow makes the retired EV in slot wait on lead's probes, lead being
// a retired EV that leads itself: slot is not probed, and returns to
// service with lead (the two name one path). A lead that leaves the
// retired list otherwise hands its probes to its first follower. Slot
// must lead no other EV. It reports whether slot now follows lead.
func (s *Set) Follow(slot, lead Slot) bool {
	i, j := s.retiredIndex(slot), s.retiredIndex(lead)
	if i < 0 || j < 0 || slot == lead || s.retired[j].lead != lead {
		return false
	}
	for k := range s.retired {
		if s.retired[k].lead == slot && k != i {
			return false
		}
	}
	pr := &s.retired[i]
	pr.lead, pr.awaiting, pr.ok, pr.at = lead, false, 0, mtime.Never
	s.dueStale = true
	return true
}

// Defer puts off the next probe of the retired EV in slot, which leads
// itself, to ProbeIntervalMax from now: another QP of the endpoint probes
// its path and will say when it works again (ProbeSoon).
func (s *Set) Defer(now mtime.Time, slot Slot) {
	if i := s.retiredIndex(slot); i >= 0 && s.retired[i].lead == slot && !s.retired[i].awaiting {
		s.retired[i].every = s.cfg.ProbeIntervalMax
		s.retired[i].at = now.Add(s.cfg.ProbeIntervalMax)
		s.dueStale = true
	}
}

func (s *Set) retiredIndex(slot Slot) int {
	for i := range s.retired {
		if s.retired[i].slot == slot {
			return i
		}
	}
	return -1
}

// NextProbe returns a doubted or retired EV whose probe is due at now
// (doubts first) and marks it as awaiting a response until
// now+ProbeTimeout. The caller sends a reliability probe on it. ok is
// false when no probe is due on a plane in mask.
func (s *Set) NextProbe(now mtime.Time, mask uint32) (slot Slot, ok bool) {
	if !s.ProbeDue(now, mask) {
		return 0, false
	}
	for _, list := range [2][]probe{s.doubts, s.retired} {
		for i := range list {
			pr := &list[i]
			p := s.Plane(pr.slot)
			if !pr.awaiting && pr.at <= now && mask&(1<<p) != 0 && s.planes[p].up {
				pr.awaiting = true
				pr.by = now.Add(s.cfg.ProbeTimeout)
				s.dueStale = true
				return pr.slot, true
			}
		}
	}
	return 0, false
}

// OnProbeResponse records a SACK answering a probe on slot (SETH pr=1).
// After ProbeSuccesses consecutive answers a retired EV returns to
// service: Good, or Skip when the last answer was ECN-marked (ecn). A
// doubted EV returns at the first answer: it lost nothing itself.
func (s *Set) OnProbeResponse(now mtime.Time, slot Slot, ecn bool) {
	if i := s.doubtIndex(slot); i >= 0 {
		var group [16]Slot
		for _, sl := range s.takeDoubts(s.doubts[i].lead, group[:0]) {
			if s.evs[sl].state != Skip || s.restEnd(sl) != mtime.Never {
				continue // a suspect ended the rest already
			}
			to := Good
			if ecn {
				to = Skip
				s.restUntil(sl, now, now.Add(s.cfg.Skip))
			}
			s.evs[sl].state = to
			s.notify(sl, Skip, to, ReasonProbes, -1)
		}
		return
	}
	i := s.retiredIndex(slot)
	if i < 0 || !s.retired[i].awaiting {
		return
	}
	pr := &s.retired[i]
	s.dueStale = true
	pr.awaiting = false
	pr.ok++
	pr.every = s.cfg.ProbeInterval
	if int(pr.ok) < s.cfg.ProbeSuccesses {
		pr.at = now.Add(pr.every)
		return
	}
	var group [16]Slot
	for _, sl := range s.takeRetired(slot, group[:0]) {
		to := Good
		if ecn {
			to = Skip
			s.rest(sl, now, now.Add(s.cfg.Skip))
		}
		s.evs[sl].state = to
		s.restore(sl)
		s.notify(sl, AssumedBad, to, ReasonProbes, -1)
	}
}

// takeRetired removes lead and its followers from the retired list and
// appends their slots, lead first, to out.
func (s *Set) takeRetired(lead Slot, out []Slot) []Slot {
	s.dueStale = true
	out = append(out, lead)
	kept := s.retired[:0]
	for _, pr := range s.retired {
		switch {
		case pr.slot == lead:
		case pr.lead == lead:
			out = append(out, pr.slot)
		default:
			kept = append(kept, pr)
		}
	}
	s.retired = kept
	return out
}

// ExpireProbes fails every probe whose deadline has passed. A retired
// EV's success count restarts and its interval doubles (up to
// ProbeIntervalMax). The EVs a failed doubt probe spoke for stop being
// doubted but keep resting: they are appended to failed, which is
// returned, for the caller to retire or release.
func (s *Set) ExpireProbes(now mtime.Time, failed []Slot) []Slot {
	for i := 0; i < len(s.doubts); {
		if d := s.doubts[i]; d.awaiting && d.by <= now {
			failed = s.takeDoubts(d.slot, failed)
			i = 0
			continue
		}
		i++
	}
	for i := range s.retired {
		pr := &s.retired[i]
		if pr.awaiting && pr.by <= now {
			s.dueStale = true
			pr.awaiting = false
			pr.ok = 0
			pr.every = min(2*pr.every, s.cfg.ProbeIntervalMax)
			pr.at = now.Add(pr.every)
		}
	}
	return failed
}

// NextDeadline returns when the set next needs attention after now: the
// earliest probe that falls due or probe deadline. Probes already due at
// now are not deadlines but work (see ProbeDue); probes on planes that are
// down still count, so the caller may wake early.
func (s *Set) NextDeadline(now mtime.Time) mtime.Time {
	t := mtime.Never
	for _, list := range [2][]probe{s.doubts, s.retired} {
		for i := range list {
			pr := &list[i]
			switch {
			case pr.awaiting:
				t = mtime.Min(t, pr.by)
			case pr.at > now:
				t = mtime.Min(t, pr.at)
			}
		}
	}
	return t
}

// ProbeDue reports whether a probe is due at now on a plane in mask.
func (s *Set) ProbeDue(now mtime.Time, mask uint32) bool {
	for m := s.dueMask(now) & mask; m != 0; m &= m - 1 {
		if s.planes[bits.TrailingZeros32(m)].up {
			return true
		}
	}
	return false
}

// dueMask returns the planes on which a probe not awaiting an answer is
// due at now (bit p: plane p), up or not.
func (s *Set) dueMask(now mtime.Time) uint32 {
	if !s.dueStale && now >= s.dueAt && now < s.dueUntil {
		return s.due
	}
	s.due, s.dueStale, s.dueAt, s.dueUntil = 0, false, now, mtime.Never
	for _, list := range [2][]probe{s.doubts, s.retired} {
		for i := range list {
			switch pr := &list[i]; {
			case pr.awaiting:
			case pr.at <= now:
				s.due |= 1 << s.Plane(pr.slot)
			default:
				s.dueUntil = mtime.Min(s.dueUntil, pr.at)
			}
		}
	}
	return s.due
}

// ProbeSoon makes the next probe of the retired EV in slot (or of its
// lead) due at now, at the first interval again, and lets one more
// answer bring it back: its path was seen to answer ProbeSuccesses probes
// elsewhere, so one of its own confirms the rest of the way. It reports
// whether slot is retired.
func (s *Set) ProbeSoon(now mtime.Time, slot Slot) bool {
	i := s.retiredIndex(slot)
	if i < 0 {
		return false
	}
	pr := &s.retired[i]
	if pr.lead != slot {
		pr = &s.retired[s.retiredIndex(pr.lead)]
	}
	pr.ok = uint8(max(int(pr.ok), s.cfg.ProbeSuccesses-1))
	if !pr.awaiting {
		pr.every, pr.at = s.cfg.ProbeInterval, min(pr.at, now)
		s.dueStale = true
	}
	return true
}

// Deny takes an EV out of service for good (controller MODIFY_EV_STATE
// DENIED). It reports whether the state changed.
func (s *Set) Deny(now mtime.Time, slot Slot) bool {
	e := &s.evs[slot]
	from := s.settle(slot, now)
	repl := -1
	switch from {
	case Denied:
		return false
	case AssumedBad:
		s.removeRetired(now, slot)
	default:
		s.removeDoubt(now, slot)
		if e.pos >= 0 {
			repl = s.deactivate(slot)
		} else {
			s.removeBackup(slot)
		}
	}
	e.state = Denied
	s.notify(slot, from, Denied, ReasonAdmin, repl)
	return true
}

// Allow returns a denied EV to service as Good. It reports whether the
// state changed.
func (s *Set) Allow(now mtime.Time, slot Slot) bool {
	e := &s.evs[slot]
	if e.state != Denied {
		return false
	}
	e.state = Good
	s.restore(slot)
	s.notify(slot, Denied, Good, ReasonAdmin, -1)
	return true
}

// Usable reports whether any plane in mask could send now.
func (s *Set) Usable(mask uint32) bool {
	for p := range s.planes {
		if mask&(1<<p) != 0 && s.planes[p].up && s.planes[p].nActive > 0 {
			return true
		}
	}
	return false
}
