package mptcp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/verbs"
)

// CC selects a connection's congestion control: how each subflow's
// window grows in congestion avoidance. Slow start, the halving on loss
// and the timeout are each subflow's own TCP's (RFC 6356 §3).
type CC uint8

const (
	// LIA is the Linked Increases Algorithm of RFC 6356: the subflows'
	// increases are coupled so that the connection takes no more than one
	// TCP flow would on its best path, and moves traffic off congested
	// paths.
	LIA CC = iota
	// OLIA is the Opportunistic Linked Increases Algorithm (Khalili et
	// al., "MPTCP is not Pareto-optimal", CoNEXT 2012;
	// draft-khalili-mptcp-congestion-control-05), which fixes LIA's
	// excess aggressiveness towards single-path flows while keeping its
	// responsiveness.
	OLIA
	// Uncoupled runs NewReno on each subflow on its own: n subflows on
	// one bottleneck take n TCP flows' share. For tests and comparison.
	Uncoupled
)

// CCNames are the names of the congestion controls, by value, as
// scenario files spell them.
var CCNames = []string{LIA: "lia", OLIA: "olia", Uncoupled: "uncoupled"}

func (c CC) String() string {
	if int(c) < len(CCNames) {
		return CCNames[c]
	}
	return fmt.Sprintf("CC(%d)", uint8(c))
}

// ParseCC returns the congestion control called name.
func ParseCC(name string) (CC, bool) {
	for i, n := range CCNames {
		if n == name {
			return CC(i), true
		}
	}
	return 0, false
}

// DefaultSubflows is the number of subflows of a connection: the number
// Raiciu et al. found MPTCP needs on a FatTree to come near the optimal
// throughput ("Improving Datacenter Performance and Robustness with
// Multipath TCP", SIGCOMM 2011), and the most subflows Linux's in-kernel
// path manager lets a connection have (`ip mptcp limits`, at most 8).
const DefaultSubflows = 8

// Config configures an Endpoint: one host's MPTCP stack.
type Config struct {
	// TCP configures the subflows: ports, MSS, RTO bounds, initial
	// window, duplicate threshold, RACK-TLP, DSCP, checksums and seed, as
	// for package tcp (docs/tcp.md). Its Variant must be NewReno and its
	// MaxQPs is set from MaxConns and Subflows.
	TCP tcp.Config
	// Subflows is the number of subflows of each connection (default 8,
	// at most 64).
	Subflows int
	// CC is the congestion control (default LIA).
	CC CC
	// MaxConns bounds the number of connections (default 512); with
	// Subflows it must stay within the TCP ports a host has
	// (MaxConns × Subflows ≤ 32511).
	MaxConns int
	// RecvWindow is the connection-level receive window in bytes (default
	// 6 MiB, Linux's tcp_rmem maximum, to which its MPTCP socket's buffer
	// autotunes). The receiver drops a mapping that ends more than
	// RecvWindow bytes past the data it has in order, and the sender
	// schedules no byte more than RecvWindow past its data ACK. The window
	// is not advertised: like the handshake's other settings, both ends
	// are set up with the same one (docs/mptcp.md).
	RecvWindow int
}

// DefaultRecvWindow is the default connection-level receive window.
const DefaultRecvWindow = 6 << 20

// MaxSubflows is the most subflows a connection may have.
const MaxSubflows = 64

// maxTCPConns is package tcp's bound on a host's connections.
const maxTCPConns = 65535 - tcp.PortBase - 256

func (c Config) withDefaults() Config {
	if c.Subflows == 0 {
		c.Subflows = DefaultSubflows
	}
	if c.MaxConns == 0 {
		c.MaxConns = 512
	}
	if c.RecvWindow == 0 {
		c.RecvWindow = DefaultRecvWindow
	}
	c.TCP.MaxQPs = c.MaxConns * c.Subflows
	return c
}

// problem describes what is wrong with c (defaults filled in), or is "".
func (c Config) problem() string {
	switch {
	case c.Subflows < 1 || c.Subflows > MaxSubflows:
		return fmt.Sprintf("subflows %d, want 1..%d", c.Subflows, MaxSubflows)
	case c.CC > Uncoupled:
		return fmt.Sprintf("cc %v", c.CC)
	case c.TCP.Variant != tcp.NewReno:
		return fmt.Sprintf("subflow variant %v: MPTCP's subflows run NewReno under coupled congestion control", c.TCP.Variant)
	case c.RecvWindow < 1 || c.RecvWindow > 1<<30:
		return fmt.Sprintf("receive window %d bytes, want 1 to 1 GiB", c.RecvWindow)
	case c.MaxConns < 1 || c.MaxConns*c.Subflows > maxTCPConns:
		return fmt.Sprintf("%d connections of %d subflows: a host has %d subflow ports", c.MaxConns, c.Subflows, maxTCPConns)
	}
	return ""
}

// Check reports whether c, with its defaults filled in, is a valid
// configuration for an endpoint with some ports: the parameters alone,
// for hosts that check a user's settings before they have ports.
func Check(c Config) error {
	c = c.withDefaults()
	if p := c.problem(); p != "" {
		return errors.New(p)
	}
	return tcp.Check(c.TCP)
}

// ConnectAttr are the attributes of Conn.Connect. There is no handshake
// (docs/mptcp.md): both ends are set up out of band and start with every
// subflow established.
type ConnectAttr struct {
	// Port is the NIC port of subflow 0; subflow i lives on port
	// (Port + i) mod the number of ports, as a path manager that opens
	// subflows over every local address does.
	Port int
	// Remote holds the peer's address for each local port (the peer
	// port on the same network plane).
	Remote []netip.Addr
	// RemoteQPN is the peer connection's number; the peer must have as
	// many subflows.
	RemoteQPN uint32
}

func (a *ConnectAttr) check(ports int) error {
	switch {
	case a.Port < 0 || a.Port >= ports:
		return fmt.Errorf("%w: port %d of %d", verbs.ErrBadPort, a.Port, ports)
	case len(a.Remote) != ports:
		return fmt.Errorf("%w: %d remote addresses for %d ports", verbs.ErrInvalidAttr, len(a.Remote), ports)
	}
	return nil
}
