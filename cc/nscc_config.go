package cc

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrNSCCConfig is wrapped by every error NSCCConfig.Validate returns, so a
// caller can tell a bad configuration from other failures with errors.Is.
var ErrNSCCConfig = errors.New("cc: invalid NSCC config")

// The reference network the UET scaling factors are relative to: the NSCC
// constants fi, eta, fi_scale and alpha were tuned for a 100 Gb/s link with
// a 12 µs base RTT, and are scaled by scaling_a = BDP/referenceBDP and
// scaling_b = target_delay/referenceRTT for other networks. Source: the
// UET 1.0 NSCC parameter formulas as instantiated by htsim's NSCC
// ([U-impl]); the MRC profile does not publish scaling_a/b (digest §6 item
// 8), so these are the only public values.
const (
	nsccReferenceLinkBitsPerSec = 100e9
	nsccReferenceRTT            = 12 * time.Microsecond
)

// NSCCConfig is the MRC NSCC profile (struct mrc_ctl_cc_nscc_cfg, digest
// §3.8) plus the network facts the UET defaults are derived from. Byte
// counts use the unit the core uses for Ack.NewlyAcked and Nack.Bytes
// (UET uses the nominal packet size, UDP length + 40).
//
// The zero value of a field means "use the default"; WithDefaults fills
// them in and documents each default and its source. For the fields where
// zero is itself a meaningful setting (FIBytes, EtaBytes, FIScale, QAGate,
// FastIncreaseDelay), a negative value means zero. MTU, LinkBitsPerSec and
// BaseRTT have no default and must be set.
type NSCCConfig struct {
	// MTU is the largest packet the QP sends, in bytes. Required. It is the
	// floor of every window reduction and the unit of the UET defaults.
	MTU int

	// LinkBitsPerSec is the bottleneck link speed of the QP,
	// min(sender, receiver), in bits per second. Required. BDP =
	// LinkBitsPerSec/8 × BaseRTT.
	LinkBitsPerSec int64

	// BaseRTT is base_rtt (UET config_base_rtt): the unloaded RTT of an MTU
	// packet over the longest path of the fabric. Required. The controller
	// starts from it and tracks the minimum RTT sample below it.
	BaseRTT time.Duration

	// NoTrimming says the fabric tail-drops instead of trimming. It only
	// changes the defaults of TargetDelay and QAThreshold (UET §3.6.13.3).
	// MRC fabrics trim, so the zero value is right for MRC.
	NoTrimming bool

	// TargetDelay is target_delay (UET target_qdelay), the queueing delay
	// NSCC steers to. Default: 0.75 × BaseRTT with trimming, 1.0 × BaseRTT
	// without [U].
	TargetDelay time.Duration

	// MaxCwndBytes is max_cwnd (UET MaxWnd), the largest window. Default:
	// 1.5 × BDP [U]. The controller scales it down in proportion when it
	// measures a base RTT below BaseRTT (UET update_base_rtt recomputes
	// max_wnd = 1.5 × linkspeed × base_rtt).
	MaxCwndBytes int

	// InitialCwndBytes is the window of a new controller. Default:
	// MaxCwndBytes [U: the initial cwnd is MaxWnd]. Not part of the MRC
	// profile; ours, for tests and for cores that want a gentler start.
	InitialCwndBytes int

	// MinCwndBytes is one packet's window: UET's reductions stop there,
	// and below it the window continues as a rate (MinPacedCwndBytes).
	// Default: MTU [U-impl]. Not part of the MRC profile; it must be at
	// least MTU.
	MinCwndBytes int

	// MinPacedCwndBytes is the smallest window. Below MinCwndBytes a window
	// is a rate: the core keeps one packet in flight and spaces packets
	// size × BaseRTT / window apart (cc.Controller), so an incast of more
	// senders than the receiver's path and queue hold packets need not be
	// trimmed on every round trip (docs/nscc.md, "Windows below one
	// packet"). The floor bounds that spacing to MinCwndBytes /
	// MinPacedCwndBytes round trips. Default MinCwndBytes/16 [ours]: 16
	// round trips. A sender at the floor offers MinPacedCwndBytes per base
	// RTT, so the floor binds beyond BDP/MinPacedCwndBytes senders into
	// one port (586 at 100 Gb/s × 12 µs with a 4 KiB MTU), and their
	// surplus is trimmed. Negative: no window below MinCwndBytes, UET's
	// floor.
	MinPacedCwndBytes int

	// Gamma is gamma, the gain of multiplicative decrease: cwnd *= 1 −
	// gamma × (avg_delay − target)/avg_delay. Default 0.8 [U-impl], in (0, 1].
	Gamma float64

	// MaxMDJump is max_md_jump, the floor of the multiplicative-decrease
	// factor: one decrease never cuts the window below MaxMDJump × cwnd.
	// Default 0.5 [U-impl], in (0, 1].
	MaxMDJump float64

	// FIBytes is fi, the fair-increase gain: each acked byte in the
	// "no ECN, delay ≥ target" state adds FIBytes/cwnd bytes, so a window's
	// worth of such ACKs adds FIBytes. Default 5 × MTU × scaling_a [U-impl].
	// Negative means zero.
	FIBytes float64

	// EtaBytes is eta, the additive increase applied once per
	// AdjustPeriodThreshold regardless of signals. Default 0.15 × MTU ×
	// scaling_a [U-impl]. Negative means zero.
	EtaBytes float64

	// FIScale is fi_scale, the fast-increase gain: in fast-increase mode
	// each acked byte adds FIScale bytes. Default 0.25 × scaling_a
	// [U-impl]. Negative means zero.
	FIScale float64

	// FastIncreaseDelay is the queueing delay below which an ACK counts as
	// "delay ≈ 0" for fast increase (UET leaves "~= 0" open). Default
	// BaseRTT/12, which is htsim's 1 µs at its 12 µs reference RTT [ours].
	// Negative disables fast increase.
	FastIncreaseDelay time.Duration

	// AdjustBytesThreshold is adjust_bytes_threshold: accumulated increases
	// are applied once more than this many bytes were acked. Default
	// 8 × MTU [U-impl].
	AdjustBytesThreshold int

	// AdjustPeriodThreshold is adjust_period_threshold: accumulated
	// increases are applied, and eta added, at least this often. Default
	// BaseRTT [U-impl].
	AdjustPeriodThreshold time.Duration

	// DisableQA is disable_qa: turn quick adapt off.
	DisableQA bool

	// QAGate is qa_gate: quick adapt only fires when the bytes acked in the
	// last window are below max_cwnd >> QAGate. Default 3 [U-impl: htsim's
	// default]. Negative means zero. At most 255 (the profile's u8).
	QAGate int

	// QAThreshold is qa_threshold: a per-packet queueing delay above it
	// triggers quick adapt. Default: with trimming, effectively infinite
	// (trims trigger quick adapt instead) [U]; without, 4 × TargetDelay,
	// the UET value for a tail-drop threshold of 5 × BDP [U].
	QAThreshold time.Duration

	// DelayEWMA is the weight of one delay sample in the average delay that
	// sizes multiplicative decrease: avg += DelayEWMA × (sample − avg).
	// Default 0.0125 [U-impl]. Not part of the MRC profile. In (0, 1].
	DelayEWMA float64
}

// NSCC defaults that are plain numbers. The derived ones are computed in
// WithDefaults.
const (
	defaultNSCCGamma     = 0.8    // [U-impl] htsim gamma
	defaultNSCCMaxMDJump = 0.5    // [U-impl] htsim MD floor
	defaultNSCCQAGate    = 3      // [U-impl] htsim qa_gate when unset
	defaultNSCCDelayEWMA = 0.0125 // [U-impl] htsim delay_alpha

	// With trimming, qa_threshold is "very large" [U]: trims drive quick
	// adapt. A Duration this long never compares below a real delay.
	nsccQAThresholdNever = time.Duration(math.MaxInt64)
)

// BDPBytes returns the bandwidth-delay product LinkBitsPerSec/8 × BaseRTT,
// rounded to the nearest byte, or 0 if either is not positive.
func (c NSCCConfig) BDPBytes() int {
	if c.LinkBitsPerSec <= 0 || c.BaseRTT <= 0 {
		return 0
	}
	return int(math.Round(float64(c.LinkBitsPerSec) / 8 * c.BaseRTT.Seconds()))
}

// scalingA returns UET scaling_a = BDP / reference BDP.
func (c NSCCConfig) scalingA() float64 {
	ref := nsccReferenceLinkBitsPerSec / 8 * nsccReferenceRTT.Seconds()
	return float64(c.BDPBytes()) / ref
}

// Alpha returns the UET proportional-increase gain alpha = 4 × MTU ×
// scaling_a × scaling_b / target_delay, in 1/s, with scaling_b =
// target_delay / reference RTT. A window's worth of ACKs with queueing
// delay d < TargetDelay grows the window by Alpha × (TargetDelay − d)
// bytes (d in seconds). It is derived, not configured: the MRC profile has
// no alpha. c should have its defaults filled in.
func (c NSCCConfig) Alpha() float64 {
	if c.TargetDelay <= 0 {
		return 0
	}
	b := c.TargetDelay.Seconds() / nsccReferenceRTT.Seconds()
	return 4 * float64(c.MTU) * c.scalingA() * b / c.TargetDelay.Seconds()
}

// WithDefaults returns c with every zero field replaced by its default. The
// defaults that depend on MTU, LinkBitsPerSec or BaseRTT are only filled in
// when those are positive. WithDefaults is idempotent.
func (c NSCCConfig) WithDefaults() NSCCConfig {
	bdp := c.BDPBytes()
	a := c.scalingA()
	if c.TargetDelay == 0 && c.BaseRTT > 0 {
		if c.NoTrimming {
			c.TargetDelay = c.BaseRTT
		} else {
			c.TargetDelay = c.BaseRTT * 3 / 4
		}
	}
	if c.MaxCwndBytes == 0 && bdp > 0 {
		c.MaxCwndBytes = bdp * 3 / 2
		if c.MaxCwndBytes < c.MTU {
			c.MaxCwndBytes = c.MTU
		}
	}
	if c.InitialCwndBytes == 0 {
		c.InitialCwndBytes = c.MaxCwndBytes
	}
	if c.MinCwndBytes == 0 {
		c.MinCwndBytes = c.MTU
	}
	if c.MinPacedCwndBytes == 0 {
		c.MinPacedCwndBytes = c.MinCwndBytes / 16
	}
	if c.Gamma == 0 {
		c.Gamma = defaultNSCCGamma
	}
	if c.MaxMDJump == 0 {
		c.MaxMDJump = defaultNSCCMaxMDJump
	}
	if bdp > 0 && c.MTU > 0 {
		if c.FIBytes == 0 {
			c.FIBytes = 5 * float64(c.MTU) * a
		}
		if c.EtaBytes == 0 {
			c.EtaBytes = 0.15 * float64(c.MTU) * a
		}
		if c.FIScale == 0 {
			c.FIScale = 0.25 * a
		}
	}
	if c.FastIncreaseDelay == 0 && c.BaseRTT > 0 {
		c.FastIncreaseDelay = c.BaseRTT / 12
	}
	if c.AdjustBytesThreshold == 0 {
		c.AdjustBytesThreshold = 8 * c.MTU
	}
	if c.AdjustPeriodThreshold == 0 {
		c.AdjustPeriodThreshold = c.BaseRTT
	}
	if c.QAGate == 0 {
		c.QAGate = defaultNSCCQAGate
	}
	if c.QAThreshold == 0 {
		if !c.NoTrimming {
			c.QAThreshold = nsccQAThresholdNever
		} else if c.TargetDelay > 0 {
			c.QAThreshold = 4 * c.TargetDelay
		}
	}
	if c.DelayEWMA == 0 {
		c.DelayEWMA = defaultNSCCDelayEWMA
	}
	return c
}

// Validate reports the first setting of c that makes no sense, wrapped in
// ErrNSCCConfig. It checks c as given: call it on c.WithDefaults() unless
// every field is set explicitly.
func (c NSCCConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrNSCCConfig}, args...)...)
	}
	switch {
	case c.MTU <= 0:
		return bad("MTU must be positive, got %d", c.MTU)
	case c.LinkBitsPerSec <= 0:
		return bad("LinkBitsPerSec must be positive, got %d", c.LinkBitsPerSec)
	case c.BaseRTT <= 0:
		return bad("BaseRTT must be positive, got %v", c.BaseRTT)
	case c.TargetDelay <= 0:
		return bad("TargetDelay must be positive, got %v", c.TargetDelay)
	case c.MinCwndBytes < c.MTU:
		return bad("MinCwndBytes %d is below the MTU %d", c.MinCwndBytes, c.MTU)
	case c.MinPacedCwndBytes > c.MinCwndBytes:
		return bad("MinPacedCwndBytes %d is above MinCwndBytes %d", c.MinPacedCwndBytes, c.MinCwndBytes)
	case c.MaxCwndBytes < c.MinCwndBytes:
		return bad("MaxCwndBytes %d is below MinCwndBytes %d", c.MaxCwndBytes, c.MinCwndBytes)
	case c.InitialCwndBytes < c.MinCwndBytes || c.InitialCwndBytes > c.MaxCwndBytes:
		return bad("InitialCwndBytes %d is outside [%d, %d]", c.InitialCwndBytes, c.MinCwndBytes, c.MaxCwndBytes)
	case !(c.Gamma > 0 && c.Gamma <= 1):
		return bad("Gamma must be in (0, 1], got %v", c.Gamma)
	case !(c.MaxMDJump > 0 && c.MaxMDJump <= 1):
		return bad("MaxMDJump must be in (0, 1], got %v", c.MaxMDJump)
	case math.IsNaN(c.FIBytes) || math.IsInf(c.FIBytes, 0):
		return bad("FIBytes must be finite, got %v", c.FIBytes)
	case math.IsNaN(c.EtaBytes) || math.IsInf(c.EtaBytes, 0):
		return bad("EtaBytes must be finite, got %v", c.EtaBytes)
	case math.IsNaN(c.FIScale) || math.IsInf(c.FIScale, 0):
		return bad("FIScale must be finite, got %v", c.FIScale)
	case c.AdjustBytesThreshold <= 0:
		return bad("AdjustBytesThreshold must be positive, got %d", c.AdjustBytesThreshold)
	case c.AdjustPeriodThreshold <= 0:
		return bad("AdjustPeriodThreshold must be positive, got %v", c.AdjustPeriodThreshold)
	case c.QAGate > 255:
		return bad("QAGate must be at most 255, got %d", c.QAGate)
	case c.QAThreshold <= 0:
		return bad("QAThreshold must be positive, got %v", c.QAThreshold)
	case !(c.DelayEWMA > 0 && c.DelayEWMA <= 1):
		return bad("DelayEWMA must be in (0, 1], got %v", c.DelayEWMA)
	}
	return nil
}
