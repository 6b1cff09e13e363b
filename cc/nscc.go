package cc

import (
	"math"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// NSCC is UET Network Signal-based Congestion Control, the algorithm MRC
// adopts as "uet-1.0-nscc" (digest §3.8; UET 1.0 §3.6.13). It keeps one
// byte window per QP, steered by two signals on every SACK: ECN (a leading,
// one-bit indicator of a queue somewhere on the path) and the queueing delay
// RTT − base_rtt (a lagging, multi-bit one):
//
//	ECN  delay vs target  action
//	no   < target         proportional increase (or fast increase near zero delay)
//	no   ≥ target         fair increase (additive)
//	yes  ≥ target         multiplicative decrease, at most once per base RTT
//	yes  < target         none: leave it to load balancing (EV SKIP)
//
// Increases accumulate and are applied by fulfill_adjustment every
// AdjustBytesThreshold bytes or AdjustPeriodThreshold. Quick adapt sets the
// window to the bytes actually delivered in the last base_rtt+target when a
// trim, a loss or a huge delay shows the window is far too large. Trims
// (NACK TRIMMED and, since MRC has no RCCC, TRIMMED_LASTHOP) and losses
// shrink the window by the packet; the responder's rcv_cwnd_pen throttles it.
//
// Create one with NewNSCC. An NSCC is used by one QP and is not safe for
// concurrent use. It reads no clock: every event carries its time.
type NSCC struct {
	cfg NSCCConfig // with defaults; what Config returns

	// Parameters, resolved once from cfg (negative "means zero" fields
	// already mapped to zero).
	minCwnd      float64 // one packet's window: UET's floor
	pacedFloor   float64 // the smallest window (MinPacedCwndBytes)
	cfgMaxWnd    float64
	alpha        float64 // proportional gain per nanosecond of headroom
	fi           float64
	eta          float64
	fiScale      float64
	fastIncDelay time.Duration
	qaGate       uint

	cwnd     float64 // always within [pacedFloor, maxWnd] between calls
	maxWnd   float64 // cfgMaxWnd scaled to the measured base RTT
	baseRTT  time.Duration
	avgDelay float64 // EWMA of the queueing delay, ns
	inflight int     // the core's latest figure, adjusted by OnSent/OnLoss

	incBytes      float64 // increases waiting for fulfill_adjustment
	receivedBytes int     // acked since the last fulfill_adjustment
	lastAdjust    mtime.Time
	lastDecrease  mtime.Time

	// A round is one base_rtt + target; roundCwnd is the window when the
	// current one began. Below one packet, reductions take at most a set
	// fraction of it per round (reductionFloor).
	roundEnd  mtime.Time
	roundCwnd float64

	fiCount      int // bytes acked in a row at ~zero delay
	increaseMode bool

	achievedBytes int // acked in the current quick-adapt window
	qaArmed       bool
	qaEnd         mtime.Time
	triggerQA     bool
	bytesToIgnore int
	bytesIgnored  int

	savedCwnd float64 // window before responder flow control; 0 = none
	penalized bool    // the last SACK carried a penalty

	stats NSCCStats
}

var _ Controller = (*NSCC)(nil)

// NSCCStats is a snapshot of an NSCC's state and event counts, for traces
// and tests. Counters only grow.
type NSCCStats struct {
	CwndBytes      int           // the window, as Window returns it
	MaxCwndBytes   int           // max_cwnd scaled to the measured base RTT
	SavedCwndBytes int           // window saved for responder flow control, 0 if none
	InflightBytes  int           // the controller's view of bytes in flight
	BaseRTT        time.Duration // the smallest RTT seen (or BaseRTT)
	AvgDelay       time.Duration // the average queueing delay MD uses
	FastIncrease   bool          // in fast-increase mode

	ProportionalIncreases   uint64 // ACKs that took proportional_increase (not fast)
	FastIncreases           uint64 // ACKs that grew the window by fast_increase
	FairIncreases           uint64 // ACKs that took fair_increase
	MultiplicativeDecreases uint64 // decreases applied (not the suppressed ones)
	ECNNoChange             uint64 // ECN ACKs with delay below target
	Adjustments             uint64 // fulfill_adjustment runs
	QuickAdapts             uint64 // quick adapts that set the window
	ECNIgnored              uint64 // ECN ACKs ignored after a quick adapt
	Trims                   uint64 // NACKs of packets trimmed in the fabric
	LastHopTrims            uint64 // NACKs of packets trimmed at the last hop
	Losses                  uint64 // OnLoss calls
	Gone                    uint64 // OnGone calls
	PenalizedAcks           uint64 // ACKs with rcv_cwnd_pen > 0
	Restores                uint64 // windows restored on r_c
}

// NewNSCC returns an NSCC for a QP created at now, configured by
// cfg.WithDefaults(). It panics if that configuration does not Validate:
// check configurations that come from users first.
func NewNSCC(cfg NSCCConfig, now mtime.Time) *NSCC {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	n := &NSCC{
		cfg:          cfg,
		minCwnd:      float64(cfg.MinCwndBytes),
		pacedFloor:   float64(cfg.MinCwndBytes),
		cfgMaxWnd:    float64(cfg.MaxCwndBytes),
		alpha:        cfg.Alpha() / float64(time.Second),
		fi:           max(cfg.FIBytes, 0),
		eta:          max(cfg.EtaBytes, 0),
		fiScale:      max(cfg.FIScale, 0),
		fastIncDelay: max(cfg.FastIncreaseDelay, 0),
		qaGate:       uint(max(cfg.QAGate, 0)),
		cwnd:         float64(cfg.InitialCwndBytes),
		maxWnd:       float64(cfg.MaxCwndBytes),
		baseRTT:      cfg.BaseRTT,
		lastAdjust:   now,
		lastDecrease: now,
	}
	if cfg.MinPacedCwndBytes >= 0 {
		n.pacedFloor = float64(max(cfg.MinPacedCwndBytes, 1))
	}
	return n
}

// Config returns the configuration in use, with defaults filled in.
func (n *NSCC) Config() NSCCConfig { return n.cfg }

// Window returns the congestion window in bytes, within
// [MinPacedCwndBytes, max_cwnd]: below MinCwndBytes it is a rate (the
// core spaces packets).
func (n *NSCC) Window() int { return int(n.cwnd) }

// Stats returns a snapshot of the controller's state and counters.
func (n *NSCC) Stats() NSCCStats {
	s := n.stats
	s.CwndBytes = n.Window()
	s.MaxCwndBytes = int(n.maxWnd)
	s.SavedCwndBytes = int(n.savedCwnd)
	s.InflightBytes = n.inflight
	s.BaseRTT = n.baseRTT
	s.AvgDelay = time.Duration(n.avgDelay)
	s.FastIncrease = n.increaseMode
	return s
}

// OnSent counts bytes as in flight (UET NSCC.OnSend).
func (n *NSCC) OnSent(_ mtime.Time, bytes int, _ bool) {
	n.inflight += bytes
}

// OnAck runs UET NSCC.OnACK for one SACK: responder flow control, base-RTT
// and delay tracking, quick adapt, the decision table and
// fulfill_adjustment. A SACK without a valid RTT sample only updates the
// counters and applies the responder penalty.
func (n *NSCC) OnAck(now mtime.Time, a Ack) {
	nrb := max(a.NewlyAcked, 0)
	n.inflight = a.Inflight
	n.bytesIgnored += nrb
	n.receivedBytes += nrb
	n.achievedBytes += nrb

	// The penalty is applied before the RTT check, as in the UET
	// pseudocode: the responder's flow control does not depend on a
	// usable sample.
	rcvLimited := n.applyPenalty(now, a, nrb)
	if a.RTT <= 0 {
		n.clamp()
		return
	}
	n.updateBaseRTT(a.RTT)
	delay := a.RTT - n.baseRTT
	n.updateDelay(delay)

	if n.quickAdapt(now, false, a.ECN, delay) {
		n.clamp()
		return
	}

	// A SACK that acknowledges nothing new (a probe's, say) has nothing to
	// increase by; skipping it also keeps it out of the fast-increase count.
	canIncrease := !rcvLimited && nrb > 0
	target := n.cfg.TargetDelay
	switch {
	case !a.ECN && delay >= target:
		if canIncrease {
			n.incBytes += n.fi * float64(nrb)
			n.stats.FairIncreases++
		}
	case !a.ECN:
		if canIncrease {
			n.proportionalIncrease(nrb, delay)
		}
	case delay >= target:
		n.multiplicativeDecrease(now)
	default:
		n.stats.ECNNoChange++
	}
	n.clamp()

	if now.Sub(n.lastAdjust) >= n.cfg.AdjustPeriodThreshold || n.receivedBytes > n.cfg.AdjustBytesThreshold {
		n.fulfillAdjustment(now)
	}
}

// OnNack reacts to a trimmed packet (UET NSCC.OnNACK). Both reasons get the
// full reaction: UET exempts TRIMMED_LASTHOP only when RCCC runs, and MRC
// has no RCCC (digest §3.5). The trim counts as a delay sample of one
// configured base RTT (UET update_delay(config_base_rtt)), sets the quick
// adapt trigger, and shrinks the window by the packet unless quick adapt
// fires or is ignoring the aftermath of the last one.
func (n *NSCC) OnNack(now mtime.Time, k Nack) {
	pkt := max(k.Bytes, 0)
	n.inflight = k.Inflight
	if k.LastHop {
		n.stats.LastHopTrims++
	} else {
		n.stats.Trims++
	}
	n.updateDelay(n.cfg.BaseRTT)
	n.bytesIgnored += pkt
	n.triggerQA = true
	// A trimmed packet counts as ECN-marked so that trims of packets sent
	// before a quick adapt fall in its ignore phase.
	if !n.quickAdapt(now, true, true, 0) {
		n.cwnd = max(n.cwnd-float64(pkt), n.reductionFloor(now, trimKeep))
	}
	n.clamp()
}

// OnLoss reacts to a packet declared lost without a trim (UET
// NSCC.OnInferredLoss): cwnd = max(cwnd − pkt, MinCwnd), unless quick adapt
// fires on the loss first. In MRC such a loss usually means a failed path
// (digest §3.5), so the loss does not arm the sticky quick-adapt trigger a
// trim arms; it only fires quick adapt if the current window has ended and
// the delivered bytes show the QP really collapsed.
func (n *NSCC) OnLoss(now mtime.Time, bytes int) {
	pkt := max(bytes, 0)
	n.stats.Losses++
	n.inflight -= pkt
	n.bytesIgnored += pkt
	if !n.quickAdapt(now, true, false, 0) {
		n.cwnd = max(n.cwnd-float64(pkt), n.reductionFloor(now, trimKeep))
	}
	n.clamp()
}

// OnGone takes a packet lost on a path already known failed out of the
// controller's flight, as OnLoss does, without shrinking the window or
// arming quick adapt: the loss carries no news of congestion.
func (n *NSCC) OnGone(_ mtime.Time, bytes int) {
	pkt := max(bytes, 0)
	n.stats.Gone++
	n.inflight -= pkt
	n.bytesIgnored += pkt
}

// applyPenalty is UET apply_cwnd_penalty: responder flow control. It
// reports whether the SACK carried a penalty, which blocks increases.
//
// UET clamps cwnd to inflight on every penalized SACK. Taken literally that
// collapses a full window to one MTU within an RTT for any penalty, since a
// window-limited sender can never refill, contradicting UET's own "64 for
// an RTT halves cwnd". We clamp once, on the first penalized SACK of an
// episode, to the bytes in flight before that SACK (dropping unused window
// of an application-limited sender), and then subtract pen × acked / 128
// per SACK. A penalized SACK that acknowledges nothing (a probe's
// answer) blocks increases and does no more: it neither starts an
// episode nor clamps, for a sender with nothing in flight, a QP that
// only probes before its data starts, would be clamped to no window at
// all by a penalty its own packets did not earn.
func (n *NSCC) applyPenalty(now mtime.Time, a Ack, nrb int) bool {
	pen := int(a.RcvCwndPen)
	if pen > 0 && nrb == 0 {
		return true
	}
	if pen > 0 {
		n.stats.PenalizedAcks++
		if n.savedCwnd == 0 {
			n.savedCwnd = n.cwnd
		}
		if !n.penalized {
			n.penalized = true
			n.cwnd = min(n.cwnd, float64(a.Inflight+nrb))
		}
		n.cwnd = max(n.cwnd-float64((pen*nrb)>>7), n.reductionFloor(now, float64(128-pen)/128))
		return true
	}
	n.penalized = false
	if a.RestoreCwnd && n.savedCwnd > 0 {
		n.cwnd = n.savedCwnd
		n.savedCwnd = 0
		n.stats.Restores++
	}
	return false
}

// updateBaseRTT keeps the smallest RTT sample and scales max_cwnd to it.
func (n *NSCC) updateBaseRTT(rtt time.Duration) {
	if rtt >= n.baseRTT {
		return
	}
	n.baseRTT = rtt
	n.maxWnd = max(n.cfgMaxWnd*float64(rtt)/float64(n.cfg.BaseRTT), n.minCwnd)
}

// updateDelay folds one queueing-delay sample into the average.
func (n *NSCC) updateDelay(delay time.Duration) {
	n.avgDelay += n.cfg.DelayEWMA * (float64(delay) - n.avgDelay)
}

// proportionalIncrease is UET proportional_increase, which first gives
// fast_increase its chance.
func (n *NSCC) proportionalIncrease(nrb int, delay time.Duration) {
	if delay < n.fastIncDelay {
		n.fiCount += nrb
		if n.fiCount > int(n.cwnd) || n.increaseMode {
			// Below one packet it may reach one packet at once, more than
			// growthCap's doubling: its amount does not scale with the
			// window, and a queue that is empty says the rate the window
			// was cut to no longer applies.
			n.cwnd = min(n.cwnd+float64(nrb)*n.fiScale, n.maxWnd, max(n.growthCap(n.cwnd), n.minCwnd))
			n.increaseMode = true
			n.stats.FastIncreases++
			return
		}
	} else {
		n.fiCount = 0
	}
	n.increaseMode = false
	n.incBytes += n.alpha * float64(nrb) * float64(n.cfg.TargetDelay-delay)
	n.stats.ProportionalIncreases++
}

// multiplicativeDecrease is UET multiplicative_decrease: at most once per
// base RTT, cut the window in proportion to how far the average delay is
// above target, by at most a factor MaxMDJump.
func (n *NSCC) multiplicativeDecrease(now mtime.Time) {
	n.increaseMode = false
	n.fiCount = 0
	target := float64(n.cfg.TargetDelay)
	avg := n.avgDelay
	if avg <= target || now.Sub(n.lastDecrease) <= n.baseRTT {
		return
	}
	n.cwnd *= max(1-n.cfg.Gamma*(avg-target)/avg, n.cfg.MaxMDJump)
	n.cwnd = max(n.cwnd, n.pacedFloor)
	n.lastDecrease = now
	n.stats.MultiplicativeDecreases++
}

// fulfillAdjustment is UET fulfill_adjustment: apply the accumulated
// increase (inc_bytes/cwnd) and, once per period, eta.
func (n *NSCC) fulfillAdjustment(now mtime.Time) {
	w := n.cwnd
	n.cwnd += n.incBytes / max(w, n.minCwnd)
	if now.Sub(n.lastAdjust) >= n.cfg.AdjustPeriodThreshold {
		n.lastAdjust = now
		if !n.penalized {
			n.cwnd += n.eta
		}
	}
	n.cwnd = min(n.cwnd, n.growthCap(w))
	n.clamp()
	n.incBytes = 0
	n.receivedBytes = 0
	n.stats.Adjustments++
}

// quickAdapt is UET quick_adapt. It reports whether it set the window or
// is ignoring ECN after the last quick adapt; either way the caller skips
// its normal reaction and the pending increases are dropped. Beyond UET, it
// never raises the window and it ends fast-increase mode when it fires.
func (n *NSCC) quickAdapt(now mtime.Time, isLoss, ecn bool, delay time.Duration) bool {
	if n.cfg.DisableQA {
		return false
	}
	done := false
	if ecn && n.bytesIgnored < n.bytesToIgnore {
		done = true
		n.stats.ECNIgnored++
	} else if now >= n.qaEnd || !n.qaArmed {
		if n.qaArmed && n.cwnd >= n.minCwnd && (n.triggerQA || isLoss || delay > n.cfg.QAThreshold) &&
			n.achievedBytes < int(n.maxWnd)>>n.qaGate {
			// UET sets cwnd = max(achieved, MTU) outright; we never let
			// quick adapt raise the window (htsim flags that case too).
			n.cwnd = min(n.cwnd, max(float64(n.achievedBytes), n.minCwnd))
			n.bytesToIgnore = max(n.inflight, 0)
			n.bytesIgnored = 0
			n.triggerQA = false
			n.increaseMode = false
			n.fiCount = 0
			done = true
			n.stats.QuickAdapts++
		}
		n.achievedBytes = 0
		n.qaArmed = true
		n.qaEnd = now.Add(n.baseRTT + n.cfg.TargetDelay)
	}
	if done {
		n.incBytes = 0
		n.receivedBytes = 0
	}
	return done
}

// clamp keeps the window within [pacedFloor, maxWnd].
func (n *NSCC) clamp() {
	n.cwnd = min(max(n.cwnd, n.pacedFloor), n.maxWnd)
}

// Windows below one packet (docs/nscc.md). UET's rules are written for
// windows of many packets and stop at one: a trim or a loss subtracts the
// packet, the responder's penalty subtracts pen × acked / 128, and an
// increase adds inc_bytes / cwnd. Below one packet they continue as a
// rate, each reduction bounded by a fraction of the window per round (a
// round carries at most one packet there), each increase by what it is at
// one packet and at most a doubling.

// trimKeep is the least part of a window below two packets that trims and
// losses leave in one round [ours]. At many packets a trim takes one
// packet of many; below two it would take the whole window. Halving made
// a paced QP's rate hinge on which of its few packets the last hop
// happened to trim (an unlucky QP's spacing doubled with each, and the
// incast's last flows waited on them); the responder's per-sender share
// (rcvfc.go) does the steering, so a quarter per round suffices.
const trimKeep = 0.75

// reductionFloor is the least a reduction at now may leave: one packet,
// UET's floor, or below it keep × the window the round began with, so
// that a round's several signals cut once; never more than the window.
func (n *NSCC) reductionFloor(now mtime.Time, keep float64) float64 {
	if n.pacedFloor >= n.minCwnd {
		return n.minCwnd
	}
	if now >= n.roundEnd {
		n.roundCwnd = n.cwnd
		n.roundEnd = now.Add(n.baseRTT + n.cfg.TargetDelay)
	}
	return min(n.cwnd, n.minCwnd, n.roundCwnd*keep)
}

// growthCap is the most an increase may take a window w to: twice w
// below one packet (a paced window's increase, computed as at one packet,
// would otherwise multiply it many times over), no limit above. Fast
// increase may go further, to one packet (proportionalIncrease).
func (n *NSCC) growthCap(w float64) float64 {
	if w < n.minCwnd {
		return 2 * w
	}
	return math.Inf(1)
}
