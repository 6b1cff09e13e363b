package mrc

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/openmrc/mrc/cc"
	"github.com/openmrc/mrc/internal/evset"
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/internal/timerq"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// QP is one MRC connection endpoint: a requester that sprays WRITEs over its
// EVs and a responder that places the peer's. A QP belongs to one Endpoint
// and shares its (lack of) concurrency safety.
type QP struct {
	ep        *Endpoint
	qpn       uint32
	state     verbs.QPState
	destroyed bool
	// timerDirty says a new deadline may be earlier than timer's: a first
	// packet in flight, a first unreported arrival, a retired EV to probe,
	// a probe in flight, work posted to an idle queue, a state change, a
	// flight emptied under a pace wait, a loss timeout shortened.
	timerDirty bool
	inReady    bool // queued in the endpoint's ready list
	err        error
	stats      verbs.Stats

	now   mtime.Time  // the latest time an input or output call passed in
	timer timerq.Node // the QP's entry in the endpoint's timer heap

	// INIT
	pd uint32 // protection domain
	// blockedFree holds the ports on which polls found q with work to
	// send but nothing it could send there. Until q's timer falls due or
	// an input reaches q (markReady, schedule and setState clear it), a
	// poll on those ports finds the same, and PollTransmit passes q by
	// without asking: a QP with a probe due on a busy plane is otherwise
	// asked at every other port's turn (docs/sim.md, "The default
	// scenario"). It sits here to fill pd's padding (TestStateSizes).
	blockedFree verbs.PortMask
	evp         EVProfile
	reps        *reps  // EVProfile.REPS only
	mixed       *mixed // EVProfile.Mixed only
	evs         *evset.Set
	// cc is the congestion controller: InitAttr.NewCC's, built in
	// ReadyToSend, or the default NSCC, built on first use (ctl) as it
	// would have been at ccBorn, when the QP entered RTS. A QP that only
	// receives never needs one (half the QPs of a large simulation).
	cc      cc.Controller
	newCC   func(now mtime.Time) cc.Controller // InitAttr.NewCC; nil: NSCC
	ccBorn  mtime.Time
	ccLater bool // the default NSCC is due, built on first use

	// RTR
	// routed says the EVs' path indices choose among distinct routes to
	// the peer (not so for a peer under the same T0): path news applies
	// (pathshare.go).
	routed    bool
	remoteQPN uint32
	remote    [][16]byte // peer port addresses by plane
	paths     PathFunc
	peer      *peer
	rx        receiver

	// RTS
	tx sender
}

// QPN returns the QP's number.
func (q *QP) QPN() uint32 { return q.qpn }

// State returns the QP's state.
func (q *QP) State() verbs.QPState { return q.state }

// Err returns why the QP entered ERROR, or nil.
func (q *QP) Err() error { return q.err }

// Stats returns the QP's counters.
func (q *QP) Stats() verbs.Stats { return q.stats }

// Window returns the congestion window in bytes and the bytes in flight.
func (q *QP) Window() (cwnd, inflight int) {
	if q.cc == nil && !q.ccLater {
		return 0, 0
	}
	return q.ctl().Window(), q.tx.inflight
}

// ctl returns the congestion controller, building the default NSCC on
// first use as ReadyToSend would have: from the endpoint's configuration,
// which does not change, at the time the QP entered RTS.
func (q *QP) ctl() cc.Controller {
	if q.cc == nil {
		q.buildCC()
	}
	return q.cc
}

func (q *QP) buildCC() {
	e := q.ep
	q.cc = cc.NewNSCC(cc.NSCCConfig{
		MTU:            e.cfg.MTU,
		BaseRTT:        e.cfg.BaseRTT,
		LinkBitsPerSec: e.cfg.LinkBitsPerSec * int64(len(e.ports)),
	}.WithDefaults(), q.ccBorn)
	q.ccLater = false
}

// EVCounts returns how many of the QP's EVs are in each state at now,
// indexed by EVState.
func (q *QP) EVCounts(now mtime.Time) [4]int {
	if q.evs == nil {
		return [4]int{}
	}
	return q.evs.Counts(now)
}

// Init moves the QP from RESET to INIT, binding its EV and CC profiles.
func (q *QP) Init(now mtime.Time, a InitAttr) error {
	if q.state != verbs.StateReset || q.destroyed {
		return fmt.Errorf("%w: Init in %v", verbs.ErrQPState, q.state)
	}
	e := q.ep
	pd, err := e.pdID(a.PD)
	if err != nil {
		return err
	}
	p := a.EVs
	if p.ActivePerPlane == 0 {
		p.ActivePerPlane = max(1, defaultActiveEVs/len(e.ports))
	}
	switch {
	case p.BackupPerPlane == 0:
		p.BackupPerPlane = min(p.ActivePerPlane, defaultBackupEVs)
	case p.BackupPerPlane < 0:
		p.BackupPerPlane = 0
	}
	if p.PathsPerPlane == 0 {
		p.PathsPerPlane = wire.MaxEVPaths
	}
	if p.Skip == 0 {
		p.Skip = e.cfg.BaseRTT
	}
	if p.PathsPerPlane < 1 || p.PathsPerPlane > wire.MaxEVPaths {
		return fmt.Errorf("%w: %d paths per plane, want 1..%d", verbs.ErrInvalidAttr, p.PathsPerPlane, wire.MaxEVPaths)
	}
	planes := len(e.ports)
	if p.REPS && p.Mixed {
		return fmt.Errorf("%w: an EV profile sprays by REPS or by the mixed mode, not both", verbs.ErrInvalidAttr)
	}
	if err := checkEVCounts(p, planes); err != nil {
		return err
	}
	// The values go to evset.New, which copies them: on the stack for
	// the usual 256 EVs (8 planes × 32) rather than 1 KB of garbage for
	// every QP a large simulation sets up.
	var stack [256]uint32
	values := stack[:0]
	if n := planes * (p.ActivePerPlane + p.BackupPerPlane); n > len(stack) {
		values = make([]uint32, 0, n)
	}
	var used [wire.MaxEVPaths / 64]uint64
	for pl := range planes {
		values = appendEVs(values, e.rng, pl, len(values), p.ActivePerPlane+p.BackupPerPlane, p.PathsPerPlane, used[:(p.PathsPerPlane+63)/64])
	}
	evs, err := evset.New(evset.Config{
		Planes:           planes,
		ActivePerPlane:   p.ActivePerPlane,
		BackupPerPlane:   p.BackupPerPlane,
		MinActive:        p.MinActive,
		Skip:             p.Skip,
		ProbeInterval:    p.ProbeInterval,
		ProbeIntervalMax: p.ProbeIntervalMax,
		ProbeTimeout:     e.cfg.LossTimeout,
		ProbeSuccesses:   p.ProbeSuccesses,
	}, values)
	if err != nil {
		return fmt.Errorf("%w: %v", verbs.ErrInvalidAttr, err)
	}
	evs.Notify = q.onEVTransition
	q.pd, q.evp, q.evs = pd, p, evs
	if p.REPS {
		q.reps = &reps{}
	}
	if p.Mixed {
		q.mixed = newMixed(evs.Len(), e.rng)
	}
	q.newCC = a.NewCC
	q.setState(now, verbs.StateInit)
	return nil
}

// checkEVCounts rejects EV counts no EV table can hold, before the table
// is allocated (evset.Config.Validate checks the rest): negative active
// counts and more than evset.MaxEVs EVs in all.
func checkEVCounts(p EVProfile, planes int) error {
	if p.ActivePerPlane < 1 || p.ActivePerPlane > evset.MaxEVs || p.BackupPerPlane > evset.MaxEVs ||
		(p.ActivePerPlane+p.BackupPerPlane)*planes > evset.MaxEVs {
		return fmt.Errorf("%w: %d active and %d backup EVs on each of %d planes, want 1..%d in all",
			verbs.ErrInvalidAttr, p.ActivePerPlane, p.BackupPerPlane, planes, evset.MaxEVs)
	}
	return nil
}

// ReadyToReceive moves the QP from INIT to RTR: it learns its peer and
// starts accepting the peer's WRITEs.
func (q *QP) ReadyToReceive(now mtime.Time, a RTRAttr) error {
	if q.state != verbs.StateInit {
		return fmt.Errorf("%w: ReadyToReceive in %v", verbs.ErrQPState, q.state)
	}
	e := q.ep
	if a.MPRDest == 0 {
		a.MPRDest = 8
	}
	if a.MaxWimmDest == 0 {
		a.MaxWimmDest = 128
	}
	switch {
	case len(a.Remote) != len(e.ports):
		return fmt.Errorf("%w: %d remote addresses for %d ports", verbs.ErrInvalidAttr, len(a.Remote), len(e.ports))
	case a.RemoteQPN > psn.Mask || a.RemoteQPN <= wire.QPNEndpoint:
		return fmt.Errorf("%w: remote QPN %d", verbs.ErrInvalidAttr, a.RemoteQPN)
	case a.RecvPSN > psn.Mask:
		return fmt.Errorf("%w: receive PSN %d is not 24-bit", verbs.ErrInvalidAttr, a.RecvPSN)
	case a.MPRDest < 1 || a.MPRDest > 255:
		return fmt.Errorf("%w: MPR %d, want 1..255", verbs.ErrInvalidAttr, a.MPRDest)
	case a.MaxWimmDest < 1 || a.MaxWimmDest > 1<<15:
		return fmt.Errorf("%w: max WRITE_IMM %d", verbs.ErrInvalidAttr, a.MaxWimmDest)
	case a.Paths == nil && e.cfg.Encap != EncapPlain:
		return fmt.Errorf("%w: %v encapsulation needs a path map", verbs.ErrInvalidAttr, e.cfg.Encap)
	}
	q.remote = make([][16]byte, len(a.Remote))
	for i, addr := range a.Remote {
		if !addr.Is6() || addr.Is4In6() {
			return fmt.Errorf("%w: remote address %v is not IPv6", verbs.ErrInvalidAttr, addr)
		}
		q.remote[i] = addr.As16()
	}
	q.remoteQPN, q.paths = a.RemoteQPN, a.Paths
	q.routed = q.pathsDiffer()
	q.rx.init(psn.PSN(a.RecvPSN), a.MPRDest, a.MaxWimmDest)
	q.peer = e.peerFor(q)
	q.setState(now, verbs.StateRTR)
	q.doubtKnownFaults(now)
	return nil
}

// ReadyToSend moves the QP from RTR to RTS: it may post WRITEs.
func (q *QP) ReadyToSend(now mtime.Time, a RTSAttr) error {
	if q.state != verbs.StateRTR {
		return fmt.Errorf("%w: ReadyToSend in %v", verbs.ErrQPState, q.state)
	}
	if a.MPR == 0 {
		a.MPR = 8
	}
	if a.MaxWimm == 0 {
		a.MaxWimm = 128
	}
	if a.TimeoutExp == 0 {
		a.TimeoutExp = 8
	}
	if a.RetryLinear == 0 {
		a.RetryLinear = 7
	}
	if a.RetryExp == 0 {
		a.RetryExp = RetryForever
	}
	a.RetryLinear, a.RetryExp = max(a.RetryLinear, 0), max(a.RetryExp, 0)
	if a.SQDepth == 0 {
		a.SQDepth = 1024
	}
	switch {
	case a.SendPSN > psn.Mask:
		return fmt.Errorf("%w: send PSN %d is not 24-bit", verbs.ErrInvalidAttr, a.SendPSN)
	case a.MPR < 1 || a.MPR > 255:
		return fmt.Errorf("%w: MPR %d, want 1..255", verbs.ErrInvalidAttr, a.MPR)
	case a.MaxWimm < 1 || a.MaxWimm > 1<<15:
		return fmt.Errorf("%w: max WRITE_IMM %d", verbs.ErrInvalidAttr, a.MaxWimm)
	case a.TimeoutExp < 1 || a.TimeoutExp > 24:
		return fmt.Errorf("%w: timeout exponent %d, want 1..24", verbs.ErrInvalidAttr, a.TimeoutExp)
	case a.RetryLinear > 7 || a.RetryExp > RetryForever:
		return fmt.Errorf("%w: retry counts %d/%d, want ≤7/≤%d", verbs.ErrInvalidAttr, a.RetryLinear, a.RetryExp, RetryForever)
	case a.SQDepth < 1 || a.SQDepth > 1<<16:
		return fmt.Errorf("%w: send queue depth %d", verbs.ErrInvalidAttr, a.SQDepth)
	}
	if q.newCC != nil {
		q.cc = q.newCC(now)
	} else {
		q.ccBorn, q.ccLater = now, true
	}
	q.tx.init(now, a)
	q.setState(now, verbs.StateRTS)
	return nil
}

// SetError moves the QP to ERROR: posted work completes with ErrFlushed and
// the QP sends and accepts nothing more.
func (q *QP) SetError(now mtime.Time) { q.fail(now, verbs.ErrFlushed) }

func (q *QP) setState(now mtime.Time, s verbs.QPState) {
	if t := q.ep.cfg.Tracer; t != nil {
		q.ep.trace(t, trace.Record{Time: now, Kind: trace.QPState, QPN: q.qpn, From: q.state.String(), To: s.String()})
	}
	q.state, q.timerDirty, q.blockedFree = s, true, 0
}

// fail moves the QP to ERROR with err, flushing its work.
func (q *QP) fail(now mtime.Time, err error) {
	if q.state == verbs.StateError {
		return
	}
	q.err = err
	q.setState(now, verbs.StateError)
	q.ep.emit(verbs.Event{Kind: verbs.EventQPError, Time: now, QPN: q.qpn, Err: err})
	q.tx.flush(q, now)
	if q.rx.acks != nil {
		q.rx.acks.ctrl.clear()
	}
}

// PostWrite queues a WRITE. It fails unless the QP is in RTS, the local
// range lies in a registered region, and the remote range lies in wr.Remote.
func (q *QP) PostWrite(now mtime.Time, wr verbs.WriteRequest) error {
	if q.state != verbs.StateRTS {
		return fmt.Errorf("%w: PostWrite in %v", verbs.ErrQPState, q.state)
	}
	q.now = max(q.now, now)
	r := q.ep.mem.Lookup(wr.Local.Key)
	if r == nil || r.PD != q.pd {
		return fmt.Errorf("%w: local key %#x in the QP's protection domain", verbs.ErrBadMR, wr.Local.Key)
	}
	if wr.Length > verbs.MaxWriteLen {
		return fmt.Errorf("%w: %d bytes, at most %d", verbs.ErrInvalidAttr, wr.Length, verbs.MaxWriteLen)
	}
	off, ok := r.Span(r.Addr+wr.LocalOffset, wr.Length)
	if !ok || wr.LocalOffset > r.Len {
		return fmt.Errorf("%w: offset %d + %d bytes in a region of %d", verbs.ErrLocalBounds, wr.LocalOffset, wr.Length, r.Len)
	}
	if wr.RemoteOffset > wr.Remote.Len || wr.Length > wr.Remote.Len-wr.RemoteOffset {
		return fmt.Errorf("%w: offset %d + %d bytes in a region of %d", verbs.ErrRemoteBounds, wr.RemoteOffset, wr.Length, wr.Remote.Len)
	}
	var src []byte
	if r.Buf != nil {
		src = r.Buf[off : off+wr.Length]
	}
	if err := q.tx.post(q, wr, src); err != nil {
		return err
	}
	q.ep.markReady(q)
	q.ep.schedule(q, now)
	return nil
}

// PostRecv posts a receive for one WRITE_IMM from the peer; id comes back
// in its EventRecvImm. Allowed from INIT on.
func (q *QP) PostRecv(id uint64) error {
	if q.state == verbs.StateReset || q.state == verbs.StateError {
		return fmt.Errorf("%w: PostRecv in %v", verbs.ErrQPState, q.state)
	}
	q.rx.recvs = append(q.rx.recvs, id)
	if q.state >= verbs.StateRTR {
		q.rx.deliverImms(q, q.now)
	}
	return nil
}

// DenyEV takes the EV with value ev out of service until AllowEV
// (controller MODIFY_EV_STATE DENIED). It reports whether the QP has it.
func (q *QP) DenyEV(now mtime.Time, ev wire.EV) bool {
	q.now = max(q.now, now)
	slot, ok := q.slotOf(uint32(ev))
	if ok {
		q.evs.Deny(now, slot)
	}
	return ok
}

// AllowEV returns a denied EV to service.
func (q *QP) AllowEV(now mtime.Time, ev wire.EV) bool {
	q.now = max(q.now, now)
	slot, ok := q.slotOf(uint32(ev))
	if ok {
		q.evs.Allow(now, slot)
		q.ep.markReady(q)
	}
	return ok
}

// EVs returns the values of every EV of the QP, plane by plane.
func (q *QP) EVs() []wire.EV {
	if q.evs == nil {
		return nil
	}
	out := make([]wire.EV, q.evs.Len())
	for i := range out {
		out[i] = wire.EV(q.evs.Value(evset.Slot(i)))
	}
	return out
}

// EVState returns the state of EV ev at now.
func (q *QP) EVState(now mtime.Time, ev wire.EV) (verbs.EVState, bool) {
	slot, ok := q.slotOf(uint32(ev))
	if !ok {
		return 0, false
	}
	return q.evs.State(slot, now), true
}

// Remote returns the peer's port addresses.
func (q *QP) Remote() []netip.Addr {
	out := make([]netip.Addr, len(q.remote))
	for i, a := range q.remote {
		out[i] = netip.AddrFrom16(a)
	}
	return out
}

func (q *QP) onEVTransition(t evset.Transition) {
	if tr := q.ep.cfg.Tracer; tr != nil {
		q.ep.trace(tr, trace.Record{Time: q.now, Kind: trace.EVState, QPN: q.qpn, EV: wire.EV(t.EV), Plane: t.Plane,
			From: t.From.String(), To: t.To.String(), Reason: t.Reason.String()})
	}
	switch t.To {
	case evset.Skip:
		if t.From == evset.Good && t.Reason != evset.ReasonSuspect && t.Reason != evset.ReasonDoubt {
			q.stats.EVSkips++
		}
		return
	case evset.Good:
		if t.From == evset.Skip {
			return // the end of a rest is internal
		}
	case evset.AssumedBad:
		q.stats.EVRetired++
		q.timerDirty = true // its first probe
	case evset.Denied:
		q.stats.EVDenied++
	}
	if t.From == evset.AssumedBad {
		q.stats.EVResurrected++
		if t.Reason == evset.ReasonProbes {
			q.ep.pathBack(q.now, q, t.Slot)
		}
	}
	q.ep.emit(verbs.Event{Kind: verbs.EventEVState, Time: q.now, QPN: q.qpn, EV: wire.EV(t.EV), Plane: t.Plane, From: t.From, To: t.To, Reason: t.Reason})
}

// deadline returns the QP's next timer deadline after now.
func (q *QP) deadline(now mtime.Time) mtime.Time {
	if q.state < verbs.StateRTR || q.state == verbs.StateError {
		return mtime.Never
	}
	t := mtime.Min(q.rx.deadline(), q.evs.NextDeadline(now))
	if q.state == verbs.StateRTS {
		t = mtime.Min(t, q.tx.deadline(q))
	}
	return t
}

// onTimer runs whatever is due at now.
func (q *QP) onTimer(now mtime.Time) {
	q.now = now
	if q.state < verbs.StateRTR || q.state == verbs.StateError {
		return
	}
	q.rx.onTimer(q, now)
	q.doubtsFailed(now, q.evs.ExpireProbes(now, nil))
	if q.state == verbs.StateRTS {
		q.tx.onTimer(q, now)
	}
	if q.hasWork(now) {
		q.ep.markReady(q)
	}
}

// defaultActiveEVs is the default number of active EVs of a QP, split evenly
// across planes (digest §3.4: "typically 128 to 256"); defaultBackupEVs
// bounds the default backups per plane, as many as the active EVs
// otherwise (digest §6b).
const (
	defaultActiveEVs = 128
	defaultBackupEVs = 16
)

// appendEVs appends n EVs for plane, the first in slot first, drawing path
// indices uniformly without repetition while the plane has enough paths
// (then another round, and so on). used is scratch for one round's draws.
func appendEVs(dst []uint32, r interface{ IntN(int) int }, plane, first, n, paths int, used []uint64) []uint32 {
	for i := range n {
		if i%paths == 0 {
			clear(used)
		}
		p := r.IntN(paths)
		for used[p/64]&(1<<(p%64)) != 0 {
			p = r.IntN(paths)
		}
		used[p/64] |= 1 << (p % 64)
		dst = append(dst, uint32(wire.NewEV(first+i, plane, p)))
	}
	return dst
}

// retirePath retires the EV in slot after an untrimmed loss. With SRv6
// paths an EV names one physical path, so every other EV of the QP on the
// same plane and path goes with it (they would each lose a packet first),
// and one probe stream asks for all of them. It reports whether slot was
// retired.
func (q *QP) retirePath(now mtime.Time, slot evset.Slot) bool {
	if !q.evs.OnBad(now, slot, evset.ReasonLoss) {
		return false
	}
	var buf [16]evset.Slot
	group := append(buf[:0], slot)
	q.samePath(slot, func(o evset.Slot) {
		q.evs.OnBad(now, o, evset.ReasonLoss)
		group = append(group, o)
	})
	q.groupRetired(group)
	return true
}

// samePath calls f for every EV of q but slot on slot's plane and path:
// with SRv6 paths, the EVs that share its fate. Without them an EV is
// only itself.
func (q *QP) samePath(slot evset.Slot, f func(evset.Slot)) {
	if q.paths == nil {
		return
	}
	p := q.pathOf(slot)
	for i := range q.evs.Len() {
		if o := evset.Slot(i); o != slot && q.pathOf(o) == p {
			f(o)
		}
	}
}

// slotOf returns the slot of EV value ev, if it is one of the QP's.
func (q *QP) slotOf(ev uint32) (evset.Slot, bool) {
	i, ok := wire.EV(ev).Slot()
	if q.evs == nil || !ok {
		return 0, false
	}
	slot := evset.Slot(i)
	if i >= q.evs.Len() || q.evs.Value(slot) != ev {
		return 0, false
	}
	return slot, true
}

// lossTimeout returns the per-packet loss timer: the configured floor, or
// the smoothed RTT plus four deviations when that is larger.
func (q *QP) lossTimeout() time.Duration {
	return max(q.ep.cfg.LossTimeout, q.tx.srtt+4*q.tx.rttvar)
}

// blockedOn returns the ports on which q is known to have nothing to
// send at now (blockedFree), none once a timer of q's is due: it may not
// have run yet, and what it changes is not in blockedFree.
func (q *QP) blockedOn(now mtime.Time) verbs.PortMask {
	if now >= q.timer.Key() {
		return 0
	}
	return q.blockedFree
}

// TimerNode gives the endpoint's timer heap its bookkeeping in q.
func (q *QP) TimerNode() *timerq.Node { return &q.timer }
