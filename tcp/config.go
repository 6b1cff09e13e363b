package tcp

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/openmrc/mrc/verbs"
)

// Variant selects a connection's congestion control.
type Variant uint8

const (
	// NewReno is loss-based: slow start and congestion avoidance (RFC
	// 5681) with SACK-based loss recovery (RFC 6675), halving the window
	// once per loss episode. Its packets are not ECN-capable.
	NewReno Variant = iota
	// DCTCP is NewReno's loss recovery plus DCTCP's ECN reaction (RFC
	// 8257; Alizadeh et al., SIGCOMM 2010): packets are ECN-capable, the
	// receiver echoes each CE mark, and the sender cuts its window by
	// alpha/2 once per window of data, alpha being the EWMA of the
	// fraction of bytes marked.
	DCTCP
)

func (v Variant) String() string {
	switch v {
	case NewReno:
		return "newreno"
	case DCTCP:
		return "dctcp"
	}
	return fmt.Sprintf("Variant(%d)", uint8(v))
}

// PortBase is the TCP port of QP number 0: a connection's local port is
// PortBase + its QP number, so ports fall in Linux's ephemeral range
// (32768–60999, net.ipv4.ip_local_port_range) for the first 28k QPs and
// a connection is found from the destination port of a segment.
const PortBase = 32768

// Defaults (docs/tcp.md gives the source of each).
const (
	DefaultMinRTO     = 200 * time.Millisecond // Linux TCP_RTO_MIN
	DefaultMaxRTO     = 120 * time.Second      // Linux TCP_RTO_MAX
	DefaultInitialRTO = time.Second            // RFC 6298 §2.1, Linux TCP_TIMEOUT_INIT
	DefaultInitCwnd   = 10                     // segments, RFC 6928
	DefaultDupThresh  = 3                      // RFC 5681 §3.2, RFC 6675
	DefaultDCTCPG     = 1.0 / 16               // RFC 8257, Linux dctcp_shift_g = 4
	DefaultDCTCPAlpha = 1.0                    // Linux dctcp_alpha_on_init = 1024/1024
	DefaultDelAck     = 40 * time.Millisecond  // Linux TCP_DELACK_MIN
)

// MaxDelAck is the longest a receiver may delay an ACK: RFC 5681 §4.2's
// 500 ms.
const MaxDelAck = 500 * time.Millisecond

// maxQuickAcks is the most quick ACKs a connection sends at its start or
// after an idle spell: Linux's TCP_MAX_QUICKACKS.
const maxQuickAcks = 16

// Config configures an Endpoint: one host's TCP stack. Zero fields take
// the defaults named in their comments.
type Config struct {
	// Ports holds the IPv6 address of each NIC port; a connection lives
	// on one for its whole life. At least one, at most verbs.MaxPlanes.
	Ports []netip.Addr
	// MSS is the most payload bytes in one segment (default 4096, the
	// simulator's MTU payload; 1..65535-80).
	MSS int
	// Variant selects congestion control (default NewReno).
	Variant Variant
	// MinRTO and MaxRTO bound the retransmission timeout (defaults
	// 200 ms and 120 s, Linux's). Datacenters lower MinRTO to a few
	// milliseconds or less (docs/tcp.md).
	MinRTO, MaxRTO time.Duration
	// InitialRTO is the timeout before the first RTT sample (default 1 s).
	InitialRTO time.Duration
	// HandshakeRTT, when set, is the round-trip time the connection's
	// handshake would have measured (the SYN/SYN-ACK exchange, which
	// this package does not model): Connect takes it as the first RTT
	// sample, so the timer and the tail loss probe start from it rather
	// than from InitialRTO, as in a stack that did the handshake.
	HandshakeRTT time.Duration
	// InitCwnd is the initial window in segments (default 10).
	InitCwnd int
	// DupThresh is the number of SACKed segments above a hole, or of
	// duplicate ACKs, that declares it lost (default 3).
	DupThresh int
	// G is DCTCP's alpha gain (default 1/16); InitialAlpha its first
	// alpha (default 1).
	G, InitialAlpha float64
	// DisableRACK turns off RACK-TLP (RFC 8985), on by default as in
	// Linux since 4.18: loss is then detected by DupThresh alone and a
	// lost tail waits for the retransmission timeout, as in the stacks of
	// the classic incast studies.
	DisableRACK bool
	// DisableDelayedACK makes the receiver acknowledge every segment at
	// once. By default it delays ACKs as Linux does (RFC 5681 §4.2): one
	// ACK for every second full-sized segment, sent at once for data out
	// of order, a duplicate, data that fills a hole, a segment that ends
	// a message (PSH), a change of CE state (RFC 8257 §3.2) and the
	// connection's first quick ACKs, and otherwise within DelAck.
	DisableDelayedACK bool
	// DelAck is the delayed-ACK timeout (default 40 ms, Linux's
	// TCP_DELACK_MIN; at most MaxDelAck). The sender's tail loss probe
	// allows for it when one segment is in flight (RFC 8985 §7.2's
	// WCDelAckT): both ends of a connection share the configuration.
	DelAck time.Duration
	// DSCP is the codepoint of every segment (default 0, best effort).
	DSCP uint8
	// SkipChecksum turns off verification of received checksums (for
	// simulations, as SkipICRC does for the RDMA transports). Sent
	// segments always carry a correct checksum.
	SkipChecksum bool
	// MaxQPs bounds the number of connections (default 4096, at most
	// 65535-PortBase-256).
	MaxQPs int
	// Seed seeds each connection's IPv6 flow label.
	Seed uint64
}

// maxQPs keeps PortBase + QP number within 16 bits (QP numbers start at
// 256).
const maxQPs = 65535 - PortBase - 256

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MinRTO, DefaultMinRTO)
	def(&c.MaxRTO, DefaultMaxRTO)
	def(&c.InitialRTO, DefaultInitialRTO)
	def(&c.DelAck, DefaultDelAck)
	if c.MSS == 0 {
		c.MSS = 4096
	}
	if c.InitCwnd == 0 {
		c.InitCwnd = DefaultInitCwnd
	}
	if c.DupThresh == 0 {
		c.DupThresh = DefaultDupThresh
	}
	if c.G == 0 {
		c.G = DefaultDCTCPG
	}
	if c.InitialAlpha == 0 {
		c.InitialAlpha = DefaultDCTCPAlpha
	}
	if c.MaxQPs == 0 {
		c.MaxQPs = 4096
	}
	return c
}

func (c Config) validate() error {
	if p := c.problem(); p != "" {
		return fmt.Errorf("%w: tcp: %s", verbs.ErrInvalidAttr, p)
	}
	return nil
}

// Check reports whether c, with its defaults filled in, is a valid
// configuration for an endpoint with some ports: the parameters alone,
// for hosts that check a user's settings before they have ports.
func Check(c Config) error {
	c = c.withDefaults()
	if len(c.Ports) == 0 {
		c.Ports = []netip.Addr{netip.IPv6Loopback()}
	}
	if p := c.problem(); p != "" {
		return errors.New(p)
	}
	return nil
}

// problem describes what is wrong with c, or is "".
func (c Config) problem() string {
	f := fmt.Sprintf
	switch {
	case len(c.Ports) == 0 || len(c.Ports) > verbs.MaxPlanes:
		return f("%d ports, want 1..%d", len(c.Ports), verbs.MaxPlanes)
	case c.MSS < 1 || c.MSS > 65535-IPv6HeaderRoom:
		return f("mss %d, want 1..%d", c.MSS, 65535-IPv6HeaderRoom)
	case c.Variant > DCTCP:
		return f("variant %v", c.Variant)
	case c.HandshakeRTT < 0:
		return f("handshake RTT %v", c.HandshakeRTT)
	case c.MinRTO < 0 || c.MaxRTO < c.MinRTO || c.InitialRTO < c.MinRTO || c.InitialRTO > c.MaxRTO:
		return f("RTO bounds: min %v, initial %v, max %v: want min <= initial <= max", c.MinRTO, c.InitialRTO, c.MaxRTO)
	case c.DelAck <= 0 || c.DelAck > MaxDelAck:
		return f("delayed-ACK timeout %v, want (0, %v] (RFC 5681 §4.2)", c.DelAck, MaxDelAck)
	case c.InitCwnd < 1 || c.InitCwnd > 1<<16:
		return f("init_cwnd %d segments, want 1..%d", c.InitCwnd, 1<<16)
	case c.DupThresh < 1 || c.DupThresh > 1<<10:
		return f("dupthresh %d, want 1..%d", c.DupThresh, 1<<10)
	case !(c.G > 0 && c.G <= 1) || !(c.InitialAlpha >= 0 && c.InitialAlpha <= 1):
		return f("DCTCP g %v and initial alpha %v, want (0, 1] and [0, 1]", c.G, c.InitialAlpha)
	case c.DSCP > 63:
		return f("DSCP %d, want 0..63", c.DSCP)
	case c.MaxQPs < 1 || c.MaxQPs > maxQPs:
		return f("max QPs %d, want 1..%d", c.MaxQPs, maxQPs)
	}
	for i, a := range c.Ports {
		if !a.Is6() || a.Is4In6() {
			return f("port %d address %v is not IPv6", i, a)
		}
	}
	return ""
}

// IPv6HeaderRoom is the IPv6 header plus the largest TCP header: the
// bytes of a segment that are not payload, at most.
const IPv6HeaderRoom = 40 + MaxHeaderLen

// ConnectAttr are the attributes of Conn.Connect: where the connection
// lives and who its peer is. There is no handshake: both ends are set up
// out of band, as the simulator sets up QPs, and start ESTABLISHED.
type ConnectAttr struct {
	// Port is the local NIC port (default 0).
	Port int
	// Remote is the peer port's address; RemoteQPN the peer connection's
	// QP number (its TCP port is PortBase + RemoteQPN).
	Remote    netip.Addr
	RemoteQPN uint32
	// SendISN and RecvISN are the initial sequence numbers of the two
	// directions (default 0; the peer must be given the mirror image).
	SendISN, RecvISN uint32
	// Owner, if set, makes the connection a subflow of a multipath
	// connection (see Owner).
	Owner Owner
}
