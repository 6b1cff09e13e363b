package roce

import (
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
)

// CCMode selects an endpoint's congestion control.
type CCMode uint8

const (
	// CCDCQCN runs DCQCN: the endpoint is a notification point (it sends
	// CNPs for CE-marked data) and every QP a reaction point (it paces
	// its sends at a rate that CNPs cut).
	CCDCQCN CCMode = iota
	// CCNone turns congestion control off: QPs send as fast as the port
	// lets them and no CNPs are sent. CNPs received are counted and
	// ignored.
	CCNone
	// CCBECN is InfiniBand's notification (IBTA Vol. 1 Annex A10): the
	// responder answers every CE-marked (FECN) data packet with an
	// immediate ACK that carries the BTH's BECN bit, and each QP's
	// reaction point, built by Config.NewReaction, paces its data and
	// reacts to the BECNs (package ib's CCA).
	CCBECN
)

func (m CCMode) String() string {
	switch m {
	case CCDCQCN:
		return "dcqcn"
	case CCNone:
		return "none"
	case CCBECN:
		return "becn"
	}
	return fmt.Sprintf("CCMode(%d)", uint8(m))
}

// Config configures an Endpoint: one RoCEv2 NIC. Zero fields take the
// defaults named in their comments; docs/roce.md gives their sources.
type Config struct {
	// Ports holds the IPv6 address of each NIC port. A QP lives on one
	// of them for its whole life. At least one, at most mrc.MaxPlanes.
	Ports []netip.Addr
	// MTU is the path MTU: the payload of every packet of a message but
	// its last (default 4096; one of the IBTA MTUs 256, 512, 1024, 2048,
	// 4096).
	MTU int
	// Seed seeds every random choice the endpoint makes: the UDP source
	// port and flow label of each QP (its ECMP path; see ConnectAttr) and
	// the memory keys.
	Seed uint64
	// LinkBitsPerSec is the speed of one port, the rate DCQCN starts at
	// and recovers to (default 100 Gb/s).
	LinkBitsPerSec int64
	// DSCP is the codepoint of data packets, ACKs and NAKs (default 26,
	// the usual RoCE class); CNPDSCP that of CNPs (default 48, NVIDIA's
	// cnp_dscp default). 0 means the default.
	DSCP    uint8
	CNPDSCP uint8
	// CC selects congestion control (default CCDCQCN).
	CC CCMode
	// DCQCN holds the DCQCN parameters; zero fields take those of
	// DCQCNPaper.
	DCQCN DCQCNConfig
	// NewReaction builds the reaction point of each QP under CCBECN, at
	// the QP's Connect (required with CCBECN, unused otherwise).
	NewReaction func(now mtime.Time) Reaction
	// AckEvery makes the responder acknowledge at least every AckEvery
	// accepted packets, besides every packet that asks for an ACK
	// (default 16).
	AckEvery int
	// SkipICRC turns off UDP checksum and ICRC verification of received
	// packets (for simulations, where the NIC's CRC engine is not
	// modelled).
	SkipICRC bool
	// MaxQPs bounds the number of QPs (default 4096).
	MaxQPs int
	// Tracer, when set, receives a record of every packet event, QP
	// state change and DCQCN rate change (docs/roce.md lists the mapping
	// to package trace's kinds). It is called synchronously and must not
	// call back into the endpoint.
	Tracer trace.Tracer
}

func (c Config) withDefaults() Config {
	if c.MTU == 0 {
		c.MTU = 4096
	}
	if c.LinkBitsPerSec == 0 {
		c.LinkBitsPerSec = 100e9
	}
	if c.DSCP == 0 {
		c.DSCP = 26
	}
	if c.CNPDSCP == 0 {
		c.CNPDSCP = 48
	}
	c.DCQCN = c.DCQCN.WithDefaults()
	if c.AckEvery == 0 {
		c.AckEvery = 16
	}
	if c.MaxQPs == 0 {
		c.MaxQPs = 4096
	}
	return c
}

func (c Config) validate() error {
	switch {
	case len(c.Ports) == 0 || len(c.Ports) > verbs.MaxPlanes:
		return fmt.Errorf("%w: %d ports, want 1..%d", verbs.ErrInvalidAttr, len(c.Ports), verbs.MaxPlanes)
	case c.MTU != 256 && c.MTU != 512 && c.MTU != 1024 && c.MTU != 2048 && c.MTU != 4096:
		return fmt.Errorf("%w: MTU %d, want 256, 512, 1024, 2048 or 4096", verbs.ErrInvalidAttr, c.MTU)
	case c.LinkBitsPerSec < 1e6 || c.LinkBitsPerSec > 1e13:
		return fmt.Errorf("%w: link speed %d b/s", verbs.ErrInvalidAttr, c.LinkBitsPerSec)
	case c.DSCP > 63 || c.CNPDSCP > 63:
		return fmt.Errorf("%w: DSCP %d/%d, want 0..63", verbs.ErrInvalidAttr, c.DSCP, c.CNPDSCP)
	case c.CC > CCBECN:
		return fmt.Errorf("%w: congestion control %v", verbs.ErrInvalidAttr, c.CC)
	case c.CC == CCBECN && c.NewReaction == nil:
		return fmt.Errorf("%w: congestion control %v without a reaction point", verbs.ErrInvalidAttr, c.CC)
	case c.AckEvery < 1 || c.AckEvery > 1<<16:
		return fmt.Errorf("%w: AckEvery %d", verbs.ErrInvalidAttr, c.AckEvery)
	case c.MaxQPs < 1 || c.MaxQPs > 1<<20:
		return fmt.Errorf("%w: max QPs %d", verbs.ErrInvalidAttr, c.MaxQPs)
	}
	if err := c.DCQCN.validate(c.LinkBitsPerSec); err != nil {
		return err
	}
	for i, a := range c.Ports {
		if !a.Is6() || a.Is4In6() {
			return fmt.Errorf("%w: port %d address %v is not IPv6", verbs.ErrInvalidAttr, i, a)
		}
	}
	return nil
}

// DCQCNConfig holds the parameters of DCQCN (Zhu et al., "Congestion
// Control for Large-Scale RDMA Deployments", SIGCOMM 2015). Rates are in
// bits per second. docs/roce.md gives the source of every default.
type DCQCNConfig struct {
	// CNPInterval is the notification point's N: a QP sends at most one
	// CNP per interval, and one at once when a CE-marked packet arrives
	// and none was sent in the last interval.
	CNPInterval time.Duration

	// G is the alpha gain g: a CNP sets alpha = (1-g)·alpha + g.
	G float64
	// AlphaPeriod is K: alpha decays to (1-g)·alpha every K without a
	// CNP.
	AlphaPeriod time.Duration
	// InitialAlpha is the alpha the first CNP of a QP cuts with.
	InitialAlpha float64
	// RateTimer is T: the rate increases once per T after a cut.
	RateTimer time.Duration
	// ByteCounter is B: the rate increases once per B bytes sent after a
	// cut.
	ByteCounter int64
	// Threshold is F: the first F increases of the timer (and of the byte
	// counter) are fast recovery, halving the distance to the target
	// rate; later ones are additive, and hyper once both counters have
	// passed F.
	Threshold int
	// AIRate is R_AI, the additive increase of the target rate;
	// HAIRate R_HAI, the hyper increase.
	AIRate  int64
	HAIRate int64
	// MinRate is the floor of the rate.
	MinRate int64
	// CutHoldoff is the least time between two rate cuts; CNPs within it
	// only update alpha (0: every CNP cuts).
	CutHoldoff time.Duration
}

// DCQCNPaper holds the parameters of the DCQCN paper's deployment, the
// defaults (docs/roce.md).
var DCQCNPaper = DCQCNConfig{
	CNPInterval:  50 * time.Microsecond,
	G:            1.0 / 256,
	AlphaPeriod:  55 * time.Microsecond,
	InitialAlpha: 1,
	RateTimer:    55 * time.Microsecond,
	ByteCounter:  10 << 20,
	Threshold:    5,
	AIRate:       40e6,
	HAIRate:      400e6, // not in the paper: 10 × R_AI, NVIDIA's ratio
	MinRate:      1e6,   // not in the paper: NVIDIA's rpg_min_rate
	CutHoldoff:   0,
}

// DCQCNNVIDIA holds NVIDIA ConnectX firmware defaults (the MLNX_OFED
// parameter names are in docs/roce.md). ConnectX updates alpha every
// microsecond with g = 1 - 1019/1024, which this model folds into its
// per-CNP update and lazy decay.
var DCQCNNVIDIA = DCQCNConfig{
	CNPInterval:  4 * time.Microsecond,
	G:            5.0 / 1024,
	AlphaPeriod:  time.Microsecond,
	InitialAlpha: 1023.0 / 1024,
	RateTimer:    300 * time.Microsecond,
	ByteCounter:  32767,
	Threshold:    1,
	AIRate:       5e6,
	HAIRate:      50e6,
	MinRate:      1e6,
	CutHoldoff:   4 * time.Microsecond,
}

// WithDefaults returns c with its zero fields taken from DCQCNPaper.
func (c DCQCNConfig) WithDefaults() DCQCNConfig {
	d := DCQCNPaper
	if c.CNPInterval == 0 {
		c.CNPInterval = d.CNPInterval
	}
	if c.G == 0 {
		c.G = d.G
	}
	if c.AlphaPeriod == 0 {
		c.AlphaPeriod = d.AlphaPeriod
	}
	if c.InitialAlpha == 0 {
		c.InitialAlpha = d.InitialAlpha
	}
	if c.RateTimer == 0 {
		c.RateTimer = d.RateTimer
	}
	if c.ByteCounter == 0 {
		c.ByteCounter = d.ByteCounter
	}
	if c.Threshold == 0 {
		c.Threshold = d.Threshold
	}
	if c.AIRate == 0 {
		c.AIRate = d.AIRate
	}
	if c.HAIRate == 0 {
		c.HAIRate = d.HAIRate
	}
	if c.MinRate == 0 {
		c.MinRate = d.MinRate
	}
	return c
}

func (c DCQCNConfig) validate(line int64) error {
	bad := func(what string, v any) error {
		return fmt.Errorf("%w: DCQCN %s %v", verbs.ErrInvalidAttr, what, v)
	}
	switch {
	case c.CNPInterval < 0:
		return bad("CNP interval", c.CNPInterval)
	case !(c.G > 0 && c.G <= 1) || math.IsNaN(c.G):
		return bad("g", c.G)
	case c.AlphaPeriod <= 0:
		return bad("alpha period", c.AlphaPeriod)
	case !(c.InitialAlpha > 0 && c.InitialAlpha <= 1):
		return bad("initial alpha", c.InitialAlpha)
	case c.RateTimer <= 0:
		return bad("rate timer", c.RateTimer)
	case c.ByteCounter <= 0:
		return bad("byte counter", c.ByteCounter)
	case c.Threshold < 1 || c.Threshold > 1<<10:
		return bad("threshold", c.Threshold)
	case c.AIRate <= 0 || c.HAIRate <= 0:
		return bad("increase rate", c.AIRate)
	case c.MinRate <= 0 || c.MinRate > line:
		return bad("min rate", c.MinRate)
	case c.CutHoldoff < 0:
		return bad("cut holdoff", c.CutHoldoff)
	}
	return nil
}

// ConnectAttr are the attributes of QP.Connect, which collapses the
// verbs transitions RESET→INIT→RTR→RTS into one call: where the QP lives,
// who its peer is, and how it retries.
type ConnectAttr struct {
	// Port is the local port the QP sends and receives on (default 0).
	Port int
	// Remote is the peer port's address; RemoteQPN the peer QP's number.
	Remote    netip.Addr
	RemoteQPN uint32
	// SendPSN is the first PSN this QP sends; RecvPSN the first PSN it
	// expects from the peer.
	SendPSN, RecvPSN uint32
	// SrcPort and FlowLabel fix the QP's UDP source port and IPv6 flow
	// label, which an ECMP fabric hashes to pick its one path. Zero means
	// drawn pseudo-randomly from a hash of Config.Seed, the port's address
	// and the QP number: the source port in 0xC000–0xFFFF (IBTA Annex
	// A17's recommendation), the flow label non-zero.
	SrcPort   uint16
	FlowLabel uint32
	// TimeoutExp is the local ACK timeout exponent: 4.096 µs ×
	// 2^TimeoutExp without progress counts one retry (IBTA Vol. 1
	// §9.7.6.1.3; default 14, 67 ms, perftest's default; 1..31).
	TimeoutExp int
	// RetryCount is how many times the requester resends after a timeout
	// or a sequence-error NAK without progress before the QP fails with
	// mrc.ErrNoPath (0..7, default 7; negative means 0).
	RetryCount int
	// RNRRetry bounds the resends after RNR NAKs (0..7, default 7, which
	// means without limit as in the spec; negative means 0).
	RNRRetry int
	// MinRNRTimer is the IBTA RNR timer code this QP's responder
	// advertises in its RNR NAKs (1..31, default 12, 0.64 ms).
	MinRNRTimer int
	// MaxOutstanding bounds the PSNs sent and not yet acknowledged
	// (default and maximum 2^23-1, the spec's limit).
	MaxOutstanding int
	// SQDepth bounds the posted, uncompleted WRITEs (default 1024).
	SQDepth int
	// ReorderWindow lets the responder accept data packets up to this
	// many PSNs ahead of the one it expects and take them in PSN order
	// once the gap fills, instead of dropping them with a sequence-error
	// NAK: the out-of-order reception an RC QP needs under per-packet
	// adaptive routing (NVIDIA's out-of-order data placement). Such a QP
	// also ignores ACKs that arrive after later ones (counted in
	// StaleACKs, not as drops). 0, the default, is IBTA's in-order
	// responder; at most 1<<16.
	ReorderWindow int
}

// maxOutstanding is the spec's bound on unacknowledged PSNs: half the
// PSN space, so that every comparison is unambiguous.
const maxOutstanding = 1<<23 - 1

func (a *ConnectAttr) withDefaults() {
	if a.TimeoutExp == 0 {
		a.TimeoutExp = 14
	}
	if a.RetryCount == 0 {
		a.RetryCount = 7
	}
	if a.RNRRetry == 0 {
		a.RNRRetry = 7
	}
	a.RetryCount, a.RNRRetry = max(a.RetryCount, 0), max(a.RNRRetry, 0)
	if a.MinRNRTimer == 0 {
		a.MinRNRTimer = 12
	}
	if a.MaxOutstanding == 0 {
		a.MaxOutstanding = maxOutstanding
	}
	if a.SQDepth == 0 {
		a.SQDepth = 1024
	}
}

func (a *ConnectAttr) validate(ports int) error {
	bad := func(f string, v ...any) error {
		return fmt.Errorf("%w: "+f, append([]any{verbs.ErrInvalidAttr}, v...)...)
	}
	switch {
	case a.Port < 0 || a.Port >= ports:
		return fmt.Errorf("%w: port %d of %d", verbs.ErrBadPort, a.Port, ports)
	case !a.Remote.Is6() || a.Remote.Is4In6():
		return bad("remote address %v is not IPv6", a.Remote)
	case a.RemoteQPN > 1<<24-1 || a.RemoteQPN < 2:
		return bad("remote QPN %d", a.RemoteQPN)
	case a.SendPSN > 1<<24-1 || a.RecvPSN > 1<<24-1:
		return bad("PSNs %d/%d are not 24-bit", a.SendPSN, a.RecvPSN)
	case a.SrcPort != 0 && a.SrcPort < 0xC000:
		return bad("UDP source port %#x outside 0xC000–0xFFFF", a.SrcPort)
	case a.FlowLabel > 1<<20-1:
		return bad("flow label %#x is not 20-bit", a.FlowLabel)
	case a.TimeoutExp < 1 || a.TimeoutExp > 31:
		return bad("timeout exponent %d, want 1..31", a.TimeoutExp)
	case a.RetryCount > 7 || a.RNRRetry > 7:
		return bad("retry counts %d/%d, want 0..7", a.RetryCount, a.RNRRetry)
	case a.MinRNRTimer < 1 || a.MinRNRTimer > 31:
		return bad("RNR timer code %d, want 1..31", a.MinRNRTimer)
	case a.MaxOutstanding < 1 || a.MaxOutstanding > maxOutstanding:
		return bad("max outstanding %d, want 1..%d", a.MaxOutstanding, maxOutstanding)
	case a.SQDepth < 1 || a.SQDepth > 1<<16:
		return bad("send queue depth %d", a.SQDepth)
	case a.ReorderWindow < 0 || a.ReorderWindow > 1<<16:
		return bad("reorder window %d, want 0..%d", a.ReorderWindow, 1<<16)
	}
	return nil
}

// rnrDelay returns the wait an RNR NAK's timer code asks for: the IBTA
// RNR timer table (Vol. 1 §9.7.5.2.8, Table "Encoding for RNR NAK
// Timer"), in microseconds; code 0 is the longest, 655.36 ms.
func rnrDelay(code uint8) time.Duration {
	return time.Duration(rnrTimer10us[code&synValueMask]) * 10 * time.Microsecond
}

// rnrTimer10us is the RNR timer table in units of 10 µs.
var rnrTimer10us = [32]int32{65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152}
