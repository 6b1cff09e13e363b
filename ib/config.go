package ib

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
)

// CCMode selects an endpoint's congestion control.
type CCMode uint8

const (
	// CCNone: no congestion control, IB's default (the subnet manager
	// leaves CCA off unless configured): QPs send as fast as credits let
	// them, and FECNs are not answered.
	CCNone CCMode = iota
	// CCCCA: InfiniBand's congestion control annex (IBTA Vol. 1 Annex
	// A10), FECN/BECN with a CCT-driven inter-packet delay per QP.
	CCCCA
)

func (m CCMode) String() string {
	switch m {
	case CCNone:
		return "none"
	case CCCCA:
		return "fecn"
	}
	return fmt.Sprintf("CCMode(%d)", uint8(m))
}

// Config configures an Endpoint: one InfiniBand HCA. Zero fields take
// the defaults named in their comments; docs/ib.md gives their sources.
type Config struct {
	// Ports holds each HCA port's address (its GID, as RoCEv2 carries
	// it). A QP lives on one port for its whole life.
	Ports []netip.Addr
	// MTU is the path MTU: 256, 512, 1024, 2048 or 4096 (default 4096,
	// IB's largest).
	MTU int
	// Seed seeds the endpoint's random choices (memory keys; the UDP
	// source port RoCEv2 framing needs).
	Seed uint64
	// LinkBitsPerSec is one port's speed (default 100 Gb/s, EDR 4x): the
	// unit of CCA's inter-packet delays.
	LinkBitsPerSec int64
	// CC selects congestion control (default CCNone).
	CC CCMode
	// CCA holds CCA's parameters (CC CCCCA); zero fields take
	// DefaultCCA's.
	CCA CCAConfig
	// TimeoutExp is the local ACK timeout exponent: 4.096 µs ×
	// 2^TimeoutExp without progress counts one retry (IBTA Vol. 1
	// §9.7.6.1.3; default 14, 67 ms, perftest's; 1..31). RetryCount is
	// how many retries fail the QP (0..7, default 7, the largest;
	// negative means 0).
	TimeoutExp int
	RetryCount int
	// AckEvery makes the responder acknowledge at least every AckEvery
	// packets, besides every packet that asks (default 16).
	AckEvery int
	// ReorderWindow lets every QP take data packets up to this many PSNs
	// ahead of the expected one in order once the gap fills: required
	// under per-packet adaptive routing (roce.ConnectAttr.ReorderWindow).
	// 0 is IB's in-order RC.
	ReorderWindow int
	// SkipICRC turns off ICRC and UDP checksum verification (for
	// simulations, where the HCA's CRC engine is not modelled).
	SkipICRC bool
	// MaxQPs bounds the number of QPs (default 4096).
	MaxQPs int
	// Tracer, when set, receives the endpoint's trace records (as
	// roce.Config.Tracer).
	Tracer trace.Tracer
}

// CCAConfig holds the parameters of IB's congestion control annex, named
// as the subnet manager's configuration names them (OpenSM's opensm.conf
// cc_* options, ibccconfig(8)). The switches' part, Threshold, is read by
// the fabric, not the HCA.
type CCAConfig struct {
	// Threshold is the bytes queued at a switch port above which it marks
	// FECN on the packets it takes while it is the root of congestion
	// (IBTA's 4-bit Threshold, here in bytes). 0 lets the fabric choose
	// (package sim: the same K as DCTCP's, max(BDP/7, 2 packets), at
	// most half a link's buffer).
	Threshold int
	// CCTIIncrease is added to a QP's CCT index per BECN (default 1).
	CCTIIncrease int
	// CCTITimer is how often the index drops by one while above
	// CCTIMin (IBTA counts it in 1.024 µs units; default 10 of them).
	CCTITimer time.Duration
	// CCTIMin is the floor of the index (default 0).
	CCTIMin int
	// CCT is the congestion control table: entry i is the inter-packet
	// delay at index i, as IBTA encodes it, a 2-bit shift and a 14-bit
	// multiplier (shift<<14 | multiplier): multiplier × (the time to send
	// an MTU-sized packet at line rate) / 2^shift, as the Linux hfi1
	// driver computes it. Its last index is CCTI_Limit. Default
	// DefaultCCT.
	CCT []uint16
}

// DefaultCCT is the default congestion control table: 128 entries rising
// by a quarter packet time each (shift 2, multiplier i), from line rate at
// index 0 to 1/32.75 of it at 127.
var DefaultCCT = func() []uint16 {
	t := make([]uint16, 128)
	for i := range t {
		t[i] = 2<<14 | uint16(i)
	}
	return t
}()

// DefaultCCA holds the defaults of CCAConfig (docs/ib.md).
var DefaultCCA = CCAConfig{CCTIIncrease: 1, CCTITimer: 10 * 1024 * time.Nanosecond, CCT: DefaultCCT}

// WithDefaults returns c with its zero fields taken from DefaultCCA.
func (c CCAConfig) WithDefaults() CCAConfig {
	d := DefaultCCA
	if c.CCTIIncrease == 0 {
		c.CCTIIncrease = d.CCTIIncrease
	}
	if c.CCTITimer == 0 {
		c.CCTITimer = d.CCTITimer
	}
	if c.CCT == nil {
		c.CCT = d.CCT
	}
	return c
}

func (c CCAConfig) validate() error {
	switch {
	case c.Threshold < 0:
		return fmt.Errorf("%w: CCA threshold %d", verbs.ErrInvalidAttr, c.Threshold)
	case c.CCTIIncrease < 1 || c.CCTIIncrease > 255:
		return fmt.Errorf("%w: CCTI increase %d, want 1..255", verbs.ErrInvalidAttr, c.CCTIIncrease)
	case c.CCTITimer < 1024*time.Nanosecond || c.CCTITimer > 65535*1024*time.Nanosecond:
		return fmt.Errorf("%w: CCTI timer %v, want 1.024µs..67.1ms", verbs.ErrInvalidAttr, c.CCTITimer)
	case len(c.CCT) < 1 || len(c.CCT) > 1<<14:
		return fmt.Errorf("%w: CCT of %d entries", verbs.ErrInvalidAttr, len(c.CCT))
	case c.CCTIMin < 0 || c.CCTIMin >= len(c.CCT):
		return fmt.Errorf("%w: CCTI min %d of a %d-entry table", verbs.ErrInvalidAttr, c.CCTIMin, len(c.CCT))
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MTU == 0 {
		c.MTU = 4096
	}
	if c.LinkBitsPerSec == 0 {
		c.LinkBitsPerSec = 100e9
	}
	c.CCA = c.CCA.WithDefaults()
	if c.TimeoutExp == 0 {
		c.TimeoutExp = 14
	}
	if c.RetryCount == 0 {
		c.RetryCount = 7
	}
	return c
}

// Check reports whether cfg is a valid configuration, with its defaults
// filled in (for checking user input before building endpoints).
func Check(cfg Config) error {
	c := cfg.withDefaults()
	switch {
	case c.CC > CCCCA:
		return fmt.Errorf("%w: congestion control %v", verbs.ErrInvalidAttr, c.CC)
	case c.TimeoutExp < 1 || c.TimeoutExp > 31:
		return fmt.Errorf("%w: timeout exponent %d, want 1..31", verbs.ErrInvalidAttr, c.TimeoutExp)
	case c.RetryCount > 7:
		return fmt.Errorf("%w: retry count %d, want 0..7", verbs.ErrInvalidAttr, c.RetryCount)
	case c.ReorderWindow < 0 || c.ReorderWindow > 1<<16:
		return fmt.Errorf("%w: reorder window %d, want 0..%d", verbs.ErrInvalidAttr, c.ReorderWindow, 1<<16)
	}
	return c.CCA.validate()
}
