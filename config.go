package mrc

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/openmrc/mrc/cc"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// Encap says how an endpoint addresses its packets (docs/wire.md).
type Encap uint8

const (
	// EncapPlain sends IPv6 straight to the peer port's address. The EV
	// rides in the flow label and UDP source port, so an ECMP fabric
	// hashes it onto a path (the API's UDP/ECMP EV format).
	EncapPlain Encap = iota
	// EncapUSID puts the EV's uSID path (RFC 9800) in the IPv6
	// destination; the peer port's address is the final destination, over
	// which the UDP checksum and ICRC are computed.
	EncapUSID
	// EncapSRv6 wraps the packet to the peer in an outer IPv6 header
	// whose destination is the EV's uSID path; the peer decapsulates. This
	// is MRC's deployed SRv6 mode (digest §3.2, §3.12).
	EncapSRv6
)

// dataEncap is the wire.DataTemplate encapsulation of each Encap.
var dataEncap = [...]wire.DataEncap{EncapPlain: wire.DataPlain, EncapUSID: wire.DataUSID, EncapSRv6: wire.DataEncapsulated}

func (e Encap) String() string {
	switch e {
	case EncapPlain:
		return "plain"
	case EncapUSID:
		return "usid"
	case EncapSRv6:
		return "srv6"
	}
	return fmt.Sprintf("Encap(%d)", uint8(e))
}

// Config configures an Endpoint: one MRC NIC with one port per plane.
// Zero fields take the defaults named in their comments.
type Config struct {
	// Ports holds the IPv6 address of each NIC port; port i is plane i.
	// At least one, at most MaxPlanes.
	Ports []netip.Addr
	// MTU is the payload carried by one data packet (default 4096).
	MTU int
	// Seed seeds every random choice the endpoint makes.
	Seed uint64
	// Encap selects how packets are addressed (default EncapPlain).
	Encap Encap
	// DSCP sets the traffic-class codepoints (default DefaultDSCP).
	DSCP wire.DSCP
	// BaseRTT is the unloaded round trip of an MTU packet over the longest
	// path (NSCC config_base_rtt; default 10 µs).
	BaseRTT time.Duration
	// LinkBitsPerSec is the speed of one port (default 100 Gb/s).
	LinkBitsPerSec int64
	// LossTimeout is the per-packet timer: a packet neither acknowledged
	// nor NACKed this long after it was sent is lost, and its EV retired
	// (default 4 × BaseRTT; the smoothed RTT + 4 × its deviation when that
	// is larger; after a trim, see QueueingBound).
	LossTimeout time.Duration
	// QueueingBound is the longest a data packet can wait in the fabric's
	// queues on its way to the peer. With trimming switches it is the sum
	// of the trim thresholds along the longest path, each over its port's
	// rate: a packet that would wait longer is trimmed instead. A packet
	// sent before a trim NACK arrived has met queues that deep, so its
	// loss timer is BaseRTT + QueueingBound when that is longer than
	// LossTimeout (docs/spec-gaps.md row 39). Default 3.5 × BaseRTT: a
	// two-tier Clos with UET's thresholds, 1 BDP at the T0 uplink and the
	// T1 downlink and 1.5 BDP at the last hop (digest §3.10).
	QueueingBound time.Duration
	// SackEvery is the SACK coalescing threshold, sack_gen_threshold
	// (default 4 packets).
	SackEvery int
	// SackDelay bounds how long a received packet waits to be
	// acknowledged (default BaseRTT/4).
	SackDelay time.Duration
	// Timestamps adds a TSETH to every data packet and takes RTT samples
	// from the timestamps the responder reflects (default off: the
	// requester keeps send times itself).
	Timestamps bool
	// SkipICRC leaves the NIC's CRC engines out: the ICRC and UDP
	// checksum are written as zero and not verified (for simulations).
	SkipICRC bool
	// MaxQPs bounds the number of QPs (default 4096).
	MaxQPs int
	// PrivatePathState keeps each QP's path failures to itself, as each
	// QP learned them before path news. The default (false) shares them:
	// with SRv6 paths, a path or plane one QP retires after its own loss
	// timer is doubted by the endpoint's other QPs, which rest it and probe
	// it once before they use it again (pathshare.go, docs/spec-gaps.md
	// row 42).
	PrivatePathState bool
	// Tracer, when set, receives a record of every packet event, EV and
	// QP state change and window change (package trace). It is called
	// synchronously and must not call back into the endpoint.
	Tracer trace.Tracer
	// Scratch, when set, is the space the endpoint decodes, encodes and
	// traces in, shared with other endpoints that are never called at the
	// same time as it (a simulator's hosts in one partition: one warm
	// scratch instead of one cold one per host). Nil: its own.
	Scratch *Scratch
}

func (c Config) withDefaults() Config {
	if c.MTU == 0 {
		c.MTU = 4096
	}
	if c.DSCP == (wire.DSCP{}) {
		c.DSCP = wire.DefaultDSCP
	}
	if c.BaseRTT == 0 {
		c.BaseRTT = 10 * time.Microsecond
	}
	if c.LinkBitsPerSec == 0 {
		c.LinkBitsPerSec = 100e9
	}
	if c.LossTimeout == 0 {
		c.LossTimeout = 4 * c.BaseRTT
	}
	if c.QueueingBound == 0 {
		c.QueueingBound = c.BaseRTT * 7 / 2
	}
	if c.SackEvery == 0 {
		c.SackEvery = 4
	}
	if c.SackDelay == 0 {
		c.SackDelay = c.BaseRTT / 4
	}
	if c.MaxQPs == 0 {
		c.MaxQPs = 4096
	}
	return c
}

// longestRTT is the longest a packet and the SACK answering it can take:
// the base RTT, the fabric's queueing bound on the way out and the
// responder's SACK hold. A SACK arriving later answers no copy sent
// before (rttsample.go).
func (c Config) longestRTT() time.Duration {
	return c.BaseRTT + c.QueueingBound + c.SackDelay
}

func (c Config) validate() error {
	switch {
	case len(c.Ports) == 0 || len(c.Ports) > verbs.MaxPlanes:
		return fmt.Errorf("%w: %d ports, want 1..%d", verbs.ErrInvalidAttr, len(c.Ports), verbs.MaxPlanes)
	case c.MTU < 256 || c.MTU > 9000:
		return fmt.Errorf("%w: MTU %d, want 256..9000", verbs.ErrInvalidAttr, c.MTU)
	case c.Encap > EncapSRv6:
		return fmt.Errorf("%w: encapsulation %v", verbs.ErrInvalidAttr, c.Encap)
	case c.BaseRTT <= 0 || c.LossTimeout <= 0 || c.SackDelay <= 0:
		return fmt.Errorf("%w: base RTT, loss timeout and SACK delay must be positive", verbs.ErrInvalidAttr)
	case c.QueueingBound < 0:
		return fmt.Errorf("%w: queueing bound %v is negative", verbs.ErrInvalidAttr, c.QueueingBound)
	case c.LinkBitsPerSec <= 0:
		return fmt.Errorf("%w: link speed %d b/s", verbs.ErrInvalidAttr, c.LinkBitsPerSec)
	case c.SackEvery < 1 || c.SackEvery > 64:
		return fmt.Errorf("%w: SACK threshold %d, want 1..64", verbs.ErrInvalidAttr, c.SackEvery)
	case c.MaxQPs < 1 || c.MaxQPs > 1<<20:
		return fmt.Errorf("%w: max QPs %d", verbs.ErrInvalidAttr, c.MaxQPs)
	}
	for i, a := range c.Ports {
		if !a.Is6() || a.Is4In6() {
			return fmt.Errorf("%w: port %d address %v is not IPv6", verbs.ErrInvalidAttr, i, a)
		}
	}
	return nil
}

// EVProfile is the EV part of a QP's setup (MRC_QP_EV_PROFILE_ID, digest
// §3.4). Zero fields take the defaults in their comments.
type EVProfile struct {
	// ActivePerPlane is the number of EVs sprayed over per plane
	// (default 128 split across the planes: 16 on 8 planes, 128 on one).
	ActivePerPlane int
	// BackupPerPlane is the number of spare EVs per plane that replace
	// retired ones (default ActivePerPlane, at most 16; negative: none).
	BackupPerPlane int
	// PathsPerPlane is the number of distinct paths a plane offers (the
	// T1 switches of a two-tier plane). EVs draw distinct path indices
	// while there are enough; 0 means 4096.
	PathsPerPlane int
	// MinActive is the floor on EVs in service (ev_min_active; default a
	// quarter of all active EVs).
	MinActive int
	// Skip is how long an EV rests after ECN or a trim (default BaseRTT).
	Skip time.Duration
	// ProbeInterval is the wait before probing a retired EV, doubling on
	// failure up to ProbeIntervalMax (defaults 100 µs and 10 ms).
	ProbeInterval    time.Duration
	ProbeIntervalMax time.Duration
	// ProbeSuccesses is how many consecutive probes must succeed before a
	// retired EV returns (default 3).
	ProbeSuccesses int
	// Oblivious disables the EV states: packets are sprayed over the
	// active EVs whatever the feedback (the UEC-like oblivious-spraying
	// baseline). Trims, losses and ECN still drive congestion control.
	Oblivious bool
	// REPS recycles EVs as UEC's REPS does (reps.go): a data packet goes
	// on an EV whose SACK came back unmarked, each once, or on a random
	// one when there is none. With Oblivious it is the uec baseline.
	REPS bool
	// Mixed sprays as htsim's "mixed" UEC load balancing does (mixed.go):
	// REPS's first form, every EV whose SACK came back unmarked reused
	// once, and while there is none a round of the EVs in random order
	// that passes over those penalized by ECN marks, trims and losses.
	// With Oblivious it is the uec baseline's mixed mode. It excludes REPS.
	Mixed bool
}

// InitAttr are the attributes of the RESET→INIT transition.
type InitAttr struct {
	EVs EVProfile
	// PD is the QP's protection domain: it sends only from regions of
	// this PD and accepts WRITEs only into them (zero: the endpoint's
	// default PD).
	PD PD
	// NewCC builds the QP's congestion controller (MRC_QP_CC_PROFILE_ID).
	// Nil means UET NSCC with defaults derived from the endpoint's
	// BaseRTT, link speed and MTU.
	NewCC func(now mtime.Time) cc.Controller
}

// PathFunc returns the uSID container (RFC 9800) that routes EV ev of
// plane to the peer: the node-specific SRv6 template of digest §3.12
// specialised with the EV's bits. Needed with EncapUSID and EncapSRv6.
type PathFunc func(plane int, ev wire.EV) [16]byte

// RTRAttr are the attributes of the INIT→RTR transition: who the peer is
// and what this QP accepts as a responder.
type RTRAttr struct {
	// RemoteQPN is the peer QP's number.
	RemoteQPN uint32
	// Remote holds the peer's port addresses, one per plane, in the same
	// plane order as Config.Ports.
	Remote []netip.Addr
	// Paths maps EVs to SRv6 paths (EncapUSID, EncapSRv6).
	Paths PathFunc
	// RecvPSN is the first PSN expected from the peer.
	RecvPSN uint32
	// MPRDest is this responder's PSN tracking window in units of 128
	// PSNs (MRC_QP_MPR_DEST; default 8, i.e. 1024 PSNs; 1..255).
	MPRDest int
	// MaxWimmDest is how many WRITE_IMMs may be outstanding towards this
	// responder (MRC_QP_MAX_WIMM_DEST; default 128).
	MaxWimmDest int
}

// RTSAttr are the attributes of the RTR→RTS transition: how this QP sends.
type RTSAttr struct {
	// SendPSN is the first PSN this QP sends.
	SendPSN uint32
	// MPR is the peer's tracking window in units of 128 PSNs: this QP
	// never has more PSNs outstanding (MRC_QP_MPR; default 8; 1..255).
	MPR int
	// MaxWimm bounds the WRITE_IMMs in flight (MRC_QP_MAX_WIMM; default 128).
	MaxWimm int
	// TimeoutExp is the local ACK timeout exponent: 1.024 µs ×
	// 2^TimeoutExp without progress counts one retry (MRC_QP_TIMEOUT;
	// default 8, 262 µs; 1..24).
	TimeoutExp int
	// RetryLinear is the number of retries at the fixed timeout (1..7,
	// default 7); RetryExp the number after it with the timeout doubling
	// each time, up to 2^16 timeouts (1..25; default RetryForever, the OCP
	// API sample's 25, which never gives up; RetryBounded is the finite
	// budget). Negative means none. When both run out without progress
	// the QP moves to ERROR with ErrNoPath.
	RetryLinear int
	RetryExp    int
	// SQDepth bounds the posted, uncompleted WRITEs (default 1024).
	SQDepth int
	// NoTrim sends every data packet of the QP, retransmissions too, with
	// DSCP.NoTrim (DSCP_NO_TRIM): for traffic that must never be trimmed,
	// or a network that cannot trim. Its congestion losses are then
	// found by the loss timer, not by trim NACKs, and confirmed as for
	// NoTrimNACKs.
	NoTrim bool
	// NoTrimNACKs says no trim NACK will come: the peer does not send
	// them, or the fabric drops instead of trimming. A packet lost with no
	// NACK may then be congestion, not a failed path, so before retiring
	// its EV the requester probes that EV itself (after resending the
	// packet elsewhere): an answer keeps it in service, and only
	// selfProbeTries unanswered probes retire it (docs/spec-gaps.md row 36).
	NoTrimNACKs bool
}

// RetryExp values.
const (
	// RetryForever never gives up (the OCP API's exp_cnt 25, and its
	// sample's value): the default. A QP whose peer vanished keeps
	// probing and retrying; only SetError or Destroy ends it.
	RetryForever = 25
	// RetryBounded is a finite budget: with the default Timeout and
	// RetryLinear, a QP without progress moves to ERROR with ErrNoPath
	// after 7 waits of 262 µs and 8 doubling ones (2× … 256×), 517
	// timeouts or about 135 ms in all. Hosts that must end when the
	// fabric or the peer is gone use it (the simulator does).
	RetryBounded = 7
)
