package sim

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/ib"
	"github.com/openmrc/mrc/mptcp"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/roce"
	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/trace"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/vswitch"
)

// Endpoint is what the simulator drives on every host: the I/O method set
// of *mrc.Endpoint, which the RoCEv2 baseline (package roce) shares. Times
// are the core's nanoseconds.
type Endpoint interface {
	PollTransmit(now mtime.Time, free verbs.PortMask, buf []byte) (verbs.Transmit, bool)
	HandleDatagram(now mtime.Time, port int, pkt []byte, wireLen int)
	NextTimeout() mtime.Time
	HandleTimeout(now mtime.Time)
	PollEvent() (verbs.Event, bool)
	PendingEvents() int
}

// NIC is one host's transport as the simulator sets it up: the Endpoint
// plus the out-of-band setup a job launcher would do (create and connect
// QPs, post work). A NIC is used by one goroutine at a time.
type NIC interface {
	Endpoint
	// Open creates the local end of a connection to host spec.Peer and
	// returns its QP number.
	Open(now mtime.Time, spec ConnSpec) (qpn uint32, err error)
	// Connect completes connection qpn once the peer's end exists.
	Connect(now mtime.Time, qpn uint32, peer Peer) error
	// Memory describes the NIC's (phantom) memory, which peers write to.
	Memory() verbs.MR
	// Send posts a WRITE_IMM of n bytes on qpn; the completion's WRID is
	// id. Receive posts the receive that the peer's WRITE_IMM completes
	// into, with WRID id.
	Send(now mtime.Time, qpn uint32, id uint64, n uint64, remote verbs.MR) error
	Receive(qpn uint32, id uint64) error
	// SetPortUp tells the NIC that port's link went down or came back.
	SetPortUp(now mtime.Time, port int, up bool) error
	// Stats returns the NIC's protocol counters.
	Stats() TransportStats
	// Delivered returns the payload bytes connection qpn has received
	// (each byte once, counted as it arrives even where the transport
	// holds it for reordering), for goodput series.
	Delivered(qpn uint32) uint64
}

// ConnSpec describes the local end of a connection.
type ConnSpec struct {
	Peer int // the remote host
	// Index numbers the connection (the flow); both ends get the same
	// index, so a single-plane transport can pick the plane from it.
	Index int
	// Paths maps EVs to uSID paths (SRv6 fabrics); PathsPerPlane is the
	// number of distinct paths per plane.
	Paths         mrc.PathFunc
	PathsPerPlane int
}

// Peer describes the remote end of a connection.
type Peer struct {
	QPN   uint32
	Addrs []netip.Addr // the peer's port addresses, by plane
	Paths mrc.PathFunc // towards the peer
}

// NICSpec is what a transport needs to build one host's NIC.
type NICSpec struct {
	Host    int
	Ports   []netip.Addr // one per plane
	Seed    uint64
	MTU     int
	BaseRTT time.Duration
	// QueueingBound is the longest a data packet can wait in the fabric's
	// queues (mrc.Config.QueueingBound); 0 where the switches do not trim.
	QueueingBound time.Duration
	// PortRate is one port's speed in bits per second.
	PortRate int64
	MaxQPs   int
	// SRv6 says the fabric forwards on uSID paths (the NIC encapsulates,
	// EncapSRv6); otherwise it routes plain IPv6 by ECMP.
	SRv6 bool
	// Tracer, when set, is the tracer the transport passes its trace
	// records to (mrc.Config.Tracer, roce.Config.Tracer).
	Tracer trace.Tracer
	// Scratch is the space the MRC core decodes, encodes and traces in,
	// shared by the NICs of one partition, which never run at the same
	// time (mrc.Config.Scratch).
	Scratch *mrc.Scratch
}

// TransportStats are a NIC's protocol counters, summed over its QPs.
type TransportStats struct {
	DataSent        uint64 // data packets, first transmissions
	Retransmits     uint64
	PayloadSent     uint64
	PayloadReceived uint64
	LossTimeouts    uint64 // packets declared lost by a timer
	RetryTimeouts   uint64 // connection-level timeouts
	TrimNACKs       uint64 // NACKs for packets trimmed mid-fabric
	LastHopNACKs    uint64 // NACKs for packets trimmed at the last hop
	ECNEchoes       uint64
	EVSkips         uint64
	EVRetired       uint64
	EVResurrected   uint64
	Drops           uint64 // received packets the NIC discarded
}

func (s *TransportStats) add(o TransportStats) {
	s.DataSent += o.DataSent
	s.Retransmits += o.Retransmits
	s.PayloadSent += o.PayloadSent
	s.PayloadReceived += o.PayloadReceived
	s.LossTimeouts += o.LossTimeouts
	s.RetryTimeouts += o.RetryTimeouts
	s.TrimNACKs += o.TrimNACKs
	s.LastHopNACKs += o.LastHopNACKs
	s.ECNEchoes += o.ECNEchoes
	s.EVSkips += o.EVSkips
	s.EVRetired += o.EVRetired
	s.EVResurrected += o.EVResurrected
	s.Drops += o.Drops
}

// Transport is one transport the simulator can run: how the fabric is
// configured for it and how to build a host's NIC.
type Transport struct {
	// Name identifies the transport in results ("mrc", "roce", …).
	Name string
	// Fabric is the switches' forwarding mode: ModeSRv6 (uSID paths) or
	// ModeECMP.
	Fabric vswitch.Mode
	// Trim turns on trimming in the switches; Lossless turns on PFC.
	// ECNLastHop marks ECN on the last hop too (DCQCN needs it; MRC
	// switches it off, digest §3.10).
	Trim, Lossless, ECNLastHop bool
	// ECNK turns on single-threshold ECN marking at K bytes queued
	// (DCTCP's switch, vswitch.QueueConfig.ECNK) in place of RED:
	// QueueSpec.ECNK.
	ECNK bool
	// New builds a host's NIC.
	New func(spec NICSpec) (NIC, error)
	// EV is the EV profile of a transport that runs the MRC core (nil
	// for the others): what New was built with, for deriving variants
	// with MRCProfile.
	EV *mrc.EVProfile
	// TCP is the configuration of a transport that runs package tcp
	// (nil for the others).
	TCP *tcp.Config
	// IB is the configuration of a transport that runs package ib (nil
	// for the others). Its CCA threshold is the switches' FECN marking
	// threshold.
	IB *ib.Config
	// Credits turns on InfiniBand's credit-based link-level flow control
	// on every link, switch ports and NIC ports alike, in place of drops
	// and PFC (vswitch.QueueConfig.Credits). CreditBuffer is each
	// receiver's buffer per virtual lane, in bytes (default: the credit
	// loop of the slowest link at full rate, see creditBuffer).
	Credits      bool
	CreditBuffer int
	// Reroute, when set, is how long the fabric takes to route around a
	// failure on its own, replacing Config.Reconvergence if shorter:
	// InfiniBand's SHIELD, whose switches tell their neighbours which
	// destinations they can no longer reach (ib-ar).
	Reroute time.Duration
	// MPTCP is the configuration of a transport that runs package mptcp
	// (nil for the others).
	MPTCP *mptcp.Config
}

// overTCP reports whether the transport's packets are TCP segments, with
// no ICRC trailer.
func (t Transport) overTCP() bool { return t.TCP != nil || t.MPTCP != nil }

// MRC is the MRC core with its default EV profile, over SRv6 uSID paths
// with trimming switches: the deployed configuration.
func MRC() Transport {
	return MRCProfile("mrc", mrc.EVProfile{}, vswitch.ModeSRv6)
}

// MRCProfile is MRC with EV profile ev, named name.
func MRCProfile(name string, ev mrc.EVProfile, fabric vswitch.Mode) Transport {
	return Transport{Name: name, Fabric: fabric, Trim: true, New: mrcFactory(ev), EV: &ev}
}

// Oblivious is oblivious per-packet spraying with the same NSCC (UEC-like):
// the MRC core with its EV states off.
func Oblivious() Transport {
	return MRCProfile("oblivious", mrc.EVProfile{Oblivious: true}, vswitch.ModeSRv6)
}

// UEC is UEC's transport as htsim models it (docs/uec.md): the MRC core
// with its EV states off and REPS load balancing, the same NSCC, over the
// same trimming fabric.
func UEC() Transport {
	return MRCProfile("uec", mrc.EVProfile{Oblivious: true, REPS: true}, vswitch.ModeSRv6)
}

// SinglePath is MRC pinned to one path per plane: the MRC core with one EV
// per plane and no backups, over an ECMP fabric that hashes each QP's EV
// onto one path. It isolates what spraying adds, with MRC's own loss
// recovery and congestion control.
func SinglePath() Transport {
	return MRCProfile("mrc-1ev-ecmp", mrc.EVProfile{ActivePerPlane: 1, BackupPerPlane: -1, MinActive: 1}, vswitch.ModeECMP)
}

// RoCE is the RoCEv2 RC baseline (package roce): one QP on one plane and
// one ECMP path for its whole life, go-back-N, DCQCN with ECN marked on
// every hop, no trimming; over a lossless (PFC) fabric when pfc is set.
func RoCE(pfc bool) Transport {
	name := "roce"
	if pfc {
		name = "roce-pfc"
	}
	return Transport{Name: name, Fabric: vswitch.ModeECMP, ECNLastHop: true, Lossless: pfc, New: roceFactory}
}

// TCP is the TCP baseline (package tcp) with variant v: one connection
// on one plane and one ECMP path (its 5-tuple) for its whole life, no
// trimming, tail drop. DCTCP's switches mark ECN at a single threshold K
// on every hop; NewReno's packets are not ECN-capable. cfg sets the TCP
// parameters (zero fields: package tcp's defaults, docs/tcp.md); its
// Variant is v's.
func TCP(name string, v tcp.Variant, cfg tcp.Config) Transport {
	cfg.Variant = v
	return Transport{Name: name, Fabric: vswitch.ModeECMP, ECNLastHop: v == tcp.DCTCP, ECNK: v == tcp.DCTCP,
		New: tcpFactory(cfg), TCP: &cfg}
}

// IB is the InfiniBand baseline (package ib; docs/ib.md): RC with
// go-back-N over a lossless fabric with credit-based flow control, each
// QP on one plane, routed by the switches in mode routing: ModeDest (a
// subnet manager's static D-mod-k forwarding tables; routing waits for
// reconvergence after a failure, as on the ECMP baselines) or
// ModeAdaptive (adaptive routing: the least-loaded port per packet, dead
// ports avoided at once and SHIELD's notifications after
// DefaultReroute; QPs take packets out of order). cfg sets the HCA's
// parameters (zero fields: package ib's defaults); with CCA on, the
// switches mark FECN (as CE) at cfg.CCA.Threshold on every hop.
func IB(name string, routing vswitch.Mode, cfg ib.Config) Transport {
	t := Transport{Name: name, Fabric: routing, Credits: true, ECNLastHop: true, ECNK: cfg.CC == ib.CCCCA}
	if routing == vswitch.ModeAdaptive {
		if cfg.ReorderWindow == 0 {
			cfg.ReorderWindow = DefaultReorderWindow
		}
		t.Reroute = DefaultReroute
	}
	t.New, t.IB = ibFactory(cfg), &cfg
	return t
}

// DefaultReorderWindow is the reorder window of ib-ar's QPs, in packets:
// far more than adaptive routing reorders in a fabric whose buffers hold
// a few packets per port (docs/ib.md).
const DefaultReorderWindow = 1024

// DefaultReroute is ib-ar's rerouting time after a failure (SHIELD's
// fast link fault notification): Mellanox put it at 5,000 times faster
// than the subnet manager's 10-20 s (docs/ib.md).
const DefaultReroute = 2 * time.Millisecond

// MPTCP is the Multipath TCP baseline (package mptcp): a connection of
// cfg.Subflows TCP subflows (default 8), each with its own 5-tuple and
// so its own ECMP path, subflow i on plane (flow index + i) mod planes;
// coupled congestion control, no trimming, tail drop. cfg sets the
// parameters (zero fields: package mptcp's defaults, docs/mptcp.md).
func MPTCP(name string, cfg mptcp.Config) Transport {
	return Transport{Name: name, Fabric: vswitch.ModeECMP, New: mptcpFactory(cfg), MPTCP: &cfg}
}

// Transports lists the built-in transports by name.
func Transports() []Transport {
	return []Transport{MRC(), Oblivious(), UEC(), SinglePath(),
		MRCProfile("mrc-ecmp", mrc.EVProfile{}, vswitch.ModeECMP), RoCE(false), RoCE(true),
		TCP("tcp", tcp.NewReno, tcp.Config{}), TCP("dctcp", tcp.DCTCP, tcp.Config{}), MPTCP("mptcp", mptcp.Config{}),
		IB("ib", vswitch.ModeDest, ib.Config{}), IB("ib-ar", vswitch.ModeAdaptive, ib.Config{})}
}

// LookupTransport returns the built-in transport called name.
func LookupTransport(name string) (Transport, error) {
	for _, t := range Transports() {
		if t.Name == name {
			if t.New == nil {
				return t, fmt.Errorf("sim: transport %q is not available", name)
			}
			return t, nil
		}
	}
	var names []string
	for _, t := range Transports() {
		names = append(names, t.Name)
	}
	return Transport{}, fmt.Errorf("sim: unknown transport %q (have %v)", name, names)
}

// ---- MRC ----------------------------------------------------------------

// phantomLen is the size of every host's phantom memory region: flows
// write at offset 0, since phantom regions place nothing.
const phantomLen = 1 << 46

// flowQP is what the simulator asks of one QP, of either transport, to
// carry a flow.
type flowQP interface {
	comparable
	PostWrite(now mtime.Time, wr verbs.WriteRequest) error
	PostRecv(id uint64) error
}

// phantomFlows is the flow half of a NIC that the built-in transports
// share: every flow is WRITE_IMMs from the host's phantom region to the
// peer's, both at offset 0. qp looks a QP up (the zero Q if there is
// none); received returns the payload bytes a QP has taken in.
type phantomFlows[Q flowQP] struct {
	mem      verbs.MR
	qp       func(qpn uint32) Q
	received func(q Q) uint64
}

func (f phantomFlows[Q]) Memory() verbs.MR { return f.mem }

func (f phantomFlows[Q]) Send(now mtime.Time, qpn uint32, id uint64, size uint64, remote verbs.MR) error {
	return f.qp(qpn).PostWrite(now, verbs.WriteRequest{ID: id, Local: f.mem, Remote: remote, Length: size, WithImm: true, Imm: uint32(id)})
}

func (f phantomFlows[Q]) Receive(qpn uint32, id uint64) error { return f.qp(qpn).PostRecv(id) }

func (f phantomFlows[Q]) Delivered(qpn uint32) uint64 {
	var none Q
	if q := f.qp(qpn); q != none {
		return f.received(q)
	}
	return 0
}

type mrcNIC struct {
	*mrc.Endpoint
	phantomFlows[*mrc.QP]
	ev mrc.EVProfile
}

var _ NIC = (*mrcNIC)(nil)

func mrcFactory(ev mrc.EVProfile) func(NICSpec) (NIC, error) {
	return func(s NICSpec) (NIC, error) {
		encap := mrc.EncapPlain
		if s.SRv6 {
			encap = mrc.EncapSRv6
		}
		ep, err := mrc.NewEndpoint(mrc.Config{
			Ports: s.Ports, MTU: s.MTU, Seed: s.Seed, Encap: encap, BaseRTT: s.BaseRTT,
			QueueingBound: s.QueueingBound, LinkBitsPerSec: s.PortRate, SkipICRC: true, MaxQPs: s.MaxQPs, Tracer: s.Tracer,
			Scratch: s.Scratch,
		})
		if err != nil {
			return nil, err
		}
		mem, err := ep.RegisterPhantom(phantomLen, verbs.AccessRemoteWrite)
		if err != nil {
			return nil, err
		}
		received := func(q *mrc.QP) uint64 { return q.Stats().PayloadReceived }
		return &mrcNIC{Endpoint: ep, phantomFlows: phantomFlows[*mrc.QP]{mem, ep.QP, received}, ev: ev}, nil
	}
}

func (n *mrcNIC) Open(now mtime.Time, spec ConnSpec) (uint32, error) {
	q, err := n.CreateQP()
	if err != nil {
		return 0, err
	}
	ev := n.ev
	if ev.PathsPerPlane == 0 {
		ev.PathsPerPlane = spec.PathsPerPlane
	}
	if err := q.Init(now, mrc.InitAttr{EVs: ev}); err != nil {
		return 0, err
	}
	return q.QPN(), nil
}

func (n *mrcNIC) Connect(now mtime.Time, qpn uint32, p Peer) error {
	q := n.QP(qpn)
	if err := q.ReadyToReceive(now, mrc.RTRAttr{RemoteQPN: p.QPN, Remote: p.Addrs, Paths: p.Paths}); err != nil {
		return err
	}
	return q.ReadyToSend(now, mrc.RTSAttr{RetryExp: mrc.RetryBounded})
}

func (n *mrcNIC) Stats() TransportStats {
	s := n.Endpoint.Stats()
	return TransportStats{
		DataSent: s.DataSent, Retransmits: s.Retransmits, PayloadSent: s.PayloadSent,
		PayloadReceived: s.PayloadReceived, LossTimeouts: s.LossTimeouts, RetryTimeouts: s.RetryTimeouts,
		TrimNACKs: s.TrimNACKs, LastHopNACKs: s.LastHopNACKs, ECNEchoes: s.ECNEchoes,
		EVSkips: s.EVSkips, EVRetired: s.EVRetired, EVResurrected: s.EVResurrected, Drops: s.Dropped(),
	}
}

// ---- RoCEv2 ---------------------------------------------------------------

type roceNIC struct {
	*roce.Endpoint
	phantomFlows[*roce.QP]
	planes int
	port   map[uint32]int // QP → its plane
}

var _ NIC = (*roceNIC)(nil)

func roceFactory(s NICSpec) (NIC, error) {
	ep, err := roce.NewEndpoint(roce.Config{
		Ports: s.Ports, MTU: s.MTU, Seed: s.Seed, LinkBitsPerSec: s.PortRate, SkipICRC: true, MaxQPs: s.MaxQPs,
		Tracer: s.Tracer,
	})
	if err != nil {
		return nil, err
	}
	return newRoceNIC(ep, len(s.Ports))
}

// newRoceNIC wraps ep, whose ports are the planes, for the simulator.
func newRoceNIC(ep *roce.Endpoint, planes int) (*roceNIC, error) {
	mem, err := ep.RegisterPhantom(phantomLen)
	if err != nil {
		return nil, err
	}
	// Held packets count as they arrive, so that a filled gap does not
	// show in a flow's series as a burst above its ports' rate.
	received := func(q *roce.QP) uint64 { return q.Stats().PayloadArrived }
	return &roceNIC{Endpoint: ep, phantomFlows: phantomFlows[*roce.QP]{mem, ep.QP, received},
		planes: planes, port: map[uint32]int{}}, nil
}

func (n *roceNIC) Open(now mtime.Time, spec ConnSpec) (uint32, error) {
	q, err := n.CreateQP()
	if err != nil {
		return 0, err
	}
	n.port[q.QPN()] = spec.Index % n.planes
	return q.QPN(), nil
}

func (n *roceNIC) Connect(now mtime.Time, qpn uint32, p Peer) error {
	port := n.port[qpn]
	return n.QP(qpn).Connect(now, roce.ConnectAttr{Port: port, Remote: p.Addrs[port], RemoteQPN: p.QPN})
}

func (n *roceNIC) Stats() TransportStats { return roceStats(n.Endpoint.Stats()) }

// roceStats maps the counters of package roce's endpoint, which package
// ib's shares.
func roceStats(s roce.Stats) TransportStats {
	return TransportStats{
		DataSent: s.DataSent, Retransmits: s.Retransmits, PayloadSent: s.PayloadSent,
		PayloadReceived: s.PayloadReceived, RetryTimeouts: s.RetryTimeouts, ECNEchoes: s.ECNEchoes,
		Drops: s.Dropped(),
	}
}

// ---- InfiniBand -------------------------------------------------------------

// ibNIC is a RoCE NIC whose QPs the HCA connects the IB way.
type ibNIC struct {
	*roceNIC
	hca *ib.Endpoint
}

var _ NIC = ibNIC{}

func ibFactory(cfg ib.Config) func(NICSpec) (NIC, error) {
	return func(s NICSpec) (NIC, error) {
		c := cfg
		c.Ports, c.Seed, c.MTU, c.LinkBitsPerSec, c.SkipICRC, c.MaxQPs, c.Tracer = s.Ports, s.Seed, s.MTU, s.PortRate, true, s.MaxQPs, s.Tracer
		hca, err := ib.NewEndpoint(c)
		if err != nil {
			return nil, err
		}
		n, err := newRoceNIC(hca.Endpoint, len(s.Ports))
		if err != nil {
			return nil, err
		}
		return ibNIC{n, hca}, nil
	}
}

func (n ibNIC) Connect(now mtime.Time, qpn uint32, p Peer) error {
	port := n.port[qpn]
	return n.hca.Connect(now, n.QP(qpn), port, p.Addrs[port], p.QPN)
}

// ---- TCP ------------------------------------------------------------------

type tcpNIC struct {
	*tcp.Endpoint
	phantomFlows[*tcp.Conn]
	planes int
	port   map[uint32]int // connection → its plane
}

var _ NIC = (*tcpNIC)(nil)

func tcpFactory(cfg tcp.Config) func(NICSpec) (NIC, error) {
	return func(s NICSpec) (NIC, error) {
		c := cfg
		c.Ports, c.Seed, c.MaxQPs, c.SkipChecksum, c.HandshakeRTT = s.Ports, s.Seed, s.MaxQPs, true, s.BaseRTT
		if c.MSS == 0 {
			c.MSS = s.MTU
		}
		ep, err := tcp.NewEndpoint(c)
		if err != nil {
			return nil, err
		}
		received := func(q *tcp.Conn) uint64 { return q.Stats().PayloadReceived }
		return &tcpNIC{Endpoint: ep, phantomFlows: phantomFlows[*tcp.Conn]{verbs.MR{Len: phantomLen}, ep.Conn, received},
			planes: len(s.Ports), port: map[uint32]int{}}, nil
	}
}

func (n *tcpNIC) Open(now mtime.Time, spec ConnSpec) (uint32, error) {
	q, err := n.CreateConn()
	if err != nil {
		return 0, err
	}
	n.port[q.QPN()] = spec.Index % n.planes
	return q.QPN(), nil
}

func (n *tcpNIC) Connect(now mtime.Time, qpn uint32, p Peer) error {
	port := n.port[qpn]
	return n.Conn(qpn).Connect(now, tcp.ConnectAttr{Port: port, Remote: p.Addrs[port], RemoteQPN: p.QPN})
}

func (n *tcpNIC) Stats() TransportStats {
	s := n.Endpoint.Stats()
	return TransportStats{
		DataSent: s.DataSent, Retransmits: s.Retransmits, PayloadSent: s.PayloadSent,
		PayloadReceived: s.PayloadReceived, LossTimeouts: s.LossTimeouts, RetryTimeouts: s.RetryTimeouts,
		ECNEchoes: s.ECNEchoes, Drops: s.Dropped(),
	}
}

// ---- MPTCP ----------------------------------------------------------------

type mptcpNIC struct {
	*mptcp.Endpoint
	phantomFlows[*mptcp.Conn]
	planes int
	port   map[uint32]int // connection → the plane of its first subflow
}

var _ NIC = (*mptcpNIC)(nil)

func mptcpFactory(cfg mptcp.Config) func(NICSpec) (NIC, error) {
	return func(s NICSpec) (NIC, error) {
		c := cfg
		c.TCP.Ports, c.TCP.Seed, c.TCP.SkipChecksum, c.TCP.HandshakeRTT, c.MaxConns = s.Ports, s.Seed, true, s.BaseRTT, s.MaxQPs
		if c.TCP.MSS == 0 {
			c.TCP.MSS = s.MTU
		}
		ep, err := mptcp.NewEndpoint(c)
		if err != nil {
			return nil, err
		}
		received := (*mptcp.Conn).Received
		return &mptcpNIC{Endpoint: ep, phantomFlows: phantomFlows[*mptcp.Conn]{verbs.MR{Len: phantomLen}, ep.Conn, received},
			planes: len(s.Ports), port: map[uint32]int{}}, nil
	}
}

func (n *mptcpNIC) Open(now mtime.Time, spec ConnSpec) (uint32, error) {
	q, err := n.CreateConn()
	if err != nil {
		return 0, err
	}
	n.port[q.QPN()] = spec.Index % n.planes
	return q.QPN(), nil
}

func (n *mptcpNIC) Connect(now mtime.Time, qpn uint32, p Peer) error {
	return n.Conn(qpn).Connect(now, mptcp.ConnectAttr{Port: n.port[qpn], Remote: p.Addrs, RemoteQPN: p.QPN})
}

func (n *mptcpNIC) Stats() TransportStats {
	s := n.Endpoint.Stats()
	return TransportStats{
		DataSent: s.DataSent, Retransmits: s.Retransmits, PayloadSent: s.PayloadSent,
		PayloadReceived: s.PayloadReceived, LossTimeouts: s.LossTimeouts, RetryTimeouts: s.RetryTimeouts,
		ECNEchoes: s.ECNEchoes, Drops: s.Dropped(),
	}
}
