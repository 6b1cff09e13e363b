// Package topo builds the fabrics the simulator runs: the multi-plane
// two-tier Clos MRC is deployed on (a leaf-spine when it has one plane),
// and a single-plane three-tier Clos (fat tree) for baselines. A Topology
// lists hosts, switches and links, gives every switch its SRv6 uSID and
// every host port its address, and maps entropy values to uSID paths
// (digest §2, §3.12).
//
// Units: rates in bits per second, delays and latencies mtime.Picos.
package topo

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/wire"
)

// NodeID names a node: hosts are 0..Hosts-1, switch i is Hosts+i.
type NodeID int32

// Switch is one switch of a topology.
type Switch struct {
	Tier  int    // 0 (T0, top of rack), 1, 2
	Plane int    // the plane it belongs to (0 in a single-plane fabric)
	Pod   int    // three-tier: the pod of a T0 or T1; -1 for T2
	Index int    // index among the switches of its tier (and plane)
	USID  uint32 // its uN micro-SID
	Ports int
	// Latency is the switch's forwarding latency.
	Latency mtime.Picos
	// PortBase indexes Topology.SwitchPortLink: port p of this switch is
	// on link SwitchPortLink[PortBase+p].
	PortBase int
}

// Link is a bidirectional link between port APort of A and port BPort of
// B. For host links A is the host and APort its plane.
type Link struct {
	A, B         NodeID
	APort, BPort int32
	Rate         int64       // bits per second, each way
	Delay        mtime.Picos // propagation delay
}

// Topology is a fabric: hosts with one NIC port per plane, switches and
// links. It is read-only once built.
type Topology struct {
	// Kind is "clos2" or "clos3".
	Kind   string
	Hosts  int
	Planes int
	// Switches, with NodeID Hosts+i for Switches[i].
	Switches []Switch
	Links    []Link
	// HostLink[h*Planes+p] is the link of host h's port p.
	HostLink []int32
	// SwitchPortLink: see Switch.PortBase.
	SwitchPortLink []int32
	// Block is the uSID block (locator) of the fabric, F3216.
	Block [16]byte

	clos2 Clos2Config
	clos3 Clos3Config
	// tierStart[plane][tier] is the index in Switches of the first
	// switch of that tier and plane.
	tierStart [][3]int
	tierCount [3]int // switches per tier per plane
}

// DefaultBlock is the uSID block every built topology uses: fcbb:bb00::/32.
var DefaultBlock = [16]byte{0xfc, 0xbb, 0xbb, 0x00}

// Node returns the NodeID of switch i.
func (t *Topology) Node(i int) NodeID { return NodeID(t.Hosts + i) }

// IsHost reports whether n is a host.
func (t *Topology) IsHost(n NodeID) bool { return int(n) < t.Hosts }

// SwitchOf returns the switch of node n, which must not be a host.
func (t *Topology) SwitchOf(n NodeID) *Switch { return &t.Switches[int(n)-t.Hosts] }

// Name returns a node's name: h<host>, or t<tier>-p<plane>-<index> for a
// switch (t<tier>-<index> in a single-plane fabric).
func (t *Topology) Name(n NodeID) string {
	if t.IsHost(n) {
		return "h" + strconv.Itoa(int(n))
	}
	s := t.SwitchOf(n)
	if t.Planes == 1 {
		return fmt.Sprintf("t%d-%d", s.Tier, s.Index)
	}
	return fmt.Sprintf("t%d-p%d-%d", s.Tier, s.Plane, s.Index)
}

// LinkName names link l by its two ends: "a/b".
func (t *Topology) LinkName(l int) string {
	k := &t.Links[l]
	return t.Name(k.A) + "/" + t.Name(k.B)
}

// Peer returns the node and port at the other end of link l from node n.
func (t *Topology) Peer(l int, n NodeID) (NodeID, int) {
	k := &t.Links[l]
	if k.A == n {
		return k.B, int(k.BPort)
	}
	return k.A, int(k.APort)
}

// T0 returns the T0 switch (index into Switches) host h's port p attaches to.
func (t *Topology) T0(h, p int) int {
	l := &t.Links[t.HostLink[h*t.Planes+p]]
	return int(l.B) - t.Hosts
}

// ---- uSID plan -----------------------------------------------------------

// The 16-bit uSIDs: with several planes, the top 4 bits are the plane and
// the low 12 bits an identifier; a single plane uses all 16 bits. The top
// eighth of the identifier space names a T0's downlinks (the last hop to a
// host port), which every T0 of a plane reuses; switches take identifiers
// from 1 up.
func (t *Topology) idBits() uint {
	if t.Planes > 1 {
		return 12
	}
	return 16
}

func (t *Topology) maxSwitchID() int { return 1<<t.idBits() - 1<<(t.idBits()-3) - 1 }

func (t *Topology) csid(plane, id int) uint32 {
	if t.Planes > 1 {
		return uint32(plane)<<12 | uint32(id)
	}
	return uint32(id)
}

// DownlinkUSID is the uSID that names port port of a T0 of plane plane
// towards a host: the last uSID of every path.
func (t *Topology) DownlinkUSID(plane, port int) uint32 {
	return t.csid(plane, 1<<t.idBits()-1<<(t.idBits()-3)+port)
}

// HostAddr returns the address of host h's port p: block | T0 uSID |
// downlink uSID, so that an ECMP fabric routes it hierarchically; in SRv6
// mode it is the inner (final) destination.
func (t *Topology) HostAddr(h, p int) netip.Addr {
	l := &t.Links[t.HostLink[h*t.Planes+p]]
	t0 := t.SwitchOf(l.B)
	return netip.AddrFrom16(wire.F3216.Container(t.Block, t0.USID, t.DownlinkUSID(p, int(l.BPort))))
}

// USIDAddr returns block | usid: the address a uN switch with that uSID
// matches, and the /48 it is routed by.
func (t *Topology) USIDAddr(usid uint32) [16]byte {
	return wire.F3216.Container(t.Block, usid)
}

// PathsPerPlane is the number of distinct paths between two hosts under
// different T0s of one plane: the EV profile's PathsPerPlane.
func (t *Topology) PathsPerPlane() int {
	switch t.Kind {
	case "clos3":
		return t.clos3.T0Up * t.clos3.T1Up
	}
	return t.clos2.T0Up
}

// Hops returns the number of links on the longest host-to-host path.
func (t *Topology) Hops() int {
	if t.Kind == "clos3" {
		return 6
	}
	return 4
}

// Paths returns the path function (an mrc.PathFunc) for host src's QP
// towards host dst: the uSID container for each plane and EV (digest
// §3.12). The T1 (and, in three tiers, T2) is chosen by ev.Path().
func (t *Topology) Paths(src, dst int) func(plane int, ev wire.EV) [16]byte {
	pr := &pathRule{t: t, src: int32(src), dst: int32(dst)}
	return pr.path
}

type pathRule struct {
	t        *Topology
	src, dst int32
}

func (r *pathRule) path(plane int, ev wire.EV) [16]byte {
	t := r.t
	la := &t.Links[t.HostLink[int(r.src)*t.Planes+plane]]
	lb := &t.Links[t.HostLink[int(r.dst)*t.Planes+plane]]
	a, b := t.SwitchOf(la.B), t.SwitchOf(lb.B)
	last := t.DownlinkUSID(plane, int(lb.BPort))
	var ids [6]uint32
	n := 0
	switch {
	case a == b:
		ids[0], ids[1], n = a.USID, last, 2
	case t.Kind == "clos3":
		c := &t.clos3
		k := ev.Path() % (c.T0Up * c.T1Up)
		agg, core := k/c.T1Up, k%c.T1Up
		aggA := &t.Switches[t.tierStart[0][1]+a.Pod*c.T0Up+agg]
		if a.Pod == b.Pod {
			ids[0], ids[1], ids[2], ids[3], n = a.USID, aggA.USID, b.USID, last, 4
		} else {
			aggB := &t.Switches[t.tierStart[0][1]+b.Pod*c.T0Up+agg]
			top := &t.Switches[t.tierStart[0][2]+agg*c.T1Up+core]
			ids = [6]uint32{a.USID, aggA.USID, top.USID, aggB.USID, b.USID, last}
			n = 6
		}
	default:
		k := ev.Path() % t.clos2.T0Up
		t1 := &t.Switches[t.tierStart[plane][1]+k]
		ids[0], ids[1], ids[2], ids[3], n = a.USID, t1.USID, b.USID, last, 4
	}
	var c [16]byte
	copy(c[:4], t.Block[:4])
	for i := range n {
		binary.BigEndian.PutUint16(c[4+2*i:], uint16(ids[i]))
	}
	return c
}

// BaseRTT returns the unloaded round trip of a data packet of dataWire
// bytes over the longest path, answered by a control packet of ackWire
// bytes: store and forward over every link of the path (two host links
// and two, or in three tiers four, fabric links) each way, and every
// switch's latency.
func (t *Topology) BaseRTT(dataWire, ackWire int) time.Duration {
	return roundUp(t.oneWay(dataWire) + t.oneWay(ackWire))
}

// OneWay returns the unloaded time a packet of wire bytes takes over the
// longest path, as BaseRTT counts it.
func (t *Topology) OneWay(wire int) time.Duration { return roundUp(t.oneWay(wire)) }

func (t *Topology) oneWay(wire int) mtime.Picos {
	var hostRate, fabRate int64
	var hostDelay, fabDelay, lat mtime.Picos
	switch t.Kind {
	case "clos3":
		c := &t.clos3
		hostRate, fabRate, hostDelay, fabDelay, lat = c.HostRate, c.FabricRate, mtime.PicosOf(c.HostDelay), mtime.PicosOf(c.FabricDelay), mtime.PicosOf(c.SwitchLatency)
	default:
		c := &t.clos2
		hostRate, fabRate, hostDelay, fabDelay, lat = c.HostRate, c.FabricRate, mtime.PicosOf(c.HostDelay), mtime.PicosOf(c.FabricDelay), mtime.PicosOf(c.SwitchLatency)
	}
	ser := func(n int, rate int64) mtime.Picos {
		return mtime.Picos((int64(n)*8*1_000_000_000_000 + rate - 1) / rate)
	}
	fab := mtime.Picos(t.Hops() - 2) // fabric links on the longest path
	return 2*(ser(wire, hostRate)+hostDelay) + fab*(ser(wire, fabRate)+fabDelay) + (fab+1)*lat
}

// roundUp rounds p up to whole nanoseconds.
func roundUp(p mtime.Picos) time.Duration {
	return time.Duration((p + mtime.PicosPerNano - 1) / mtime.PicosPerNano)
}

// ---- element names ---------------------------------------------------------

// ElementKind says what an Element names.
type ElementKind uint8

const (
	ElemHost     ElementKind = iota + 1 // a host (all its ports)
	ElemHostPort                        // one NIC port: the link to its T0
	ElemSwitch
	ElemLink
)

// Element is a failable part of the fabric.
type Element struct {
	Kind ElementKind
	ID   int // host, switch index, or link index
}

// Find resolves a name: "h12" (host), "h12/p3" (host 12's port 3 and its
// link), "t1-p0-5" or "t1-5" (switch), "t0-p0-1/t1-p0-5" (the link between
// two switches).
func (t *Topology) Find(name string) (Element, error) {
	a, b, isLink := strings.Cut(name, "/")
	na, err := t.findNode(a)
	if err != nil {
		return Element{}, err
	}
	if !isLink {
		if t.IsHost(na) {
			return Element{ElemHost, int(na)}, nil
		}
		return Element{ElemSwitch, int(na) - t.Hosts}, nil
	}
	if t.IsHost(na) {
		p, ok := strings.CutPrefix(b, "p")
		port, err := strconv.Atoi(p)
		if !ok || err != nil || port < 0 || port >= t.Planes {
			return Element{}, fmt.Errorf("topology: %q: host port %q, want p0..p%d", name, b, t.Planes-1)
		}
		return Element{ElemHostPort, int(t.HostLink[int(na)*t.Planes+port])}, nil
	}
	nb, err := t.findNode(b)
	if err != nil {
		return Element{}, err
	}
	s := t.SwitchOf(na)
	for p := range s.Ports {
		l := int(t.SwitchPortLink[s.PortBase+p])
		if peer, _ := t.Peer(l, na); peer == nb {
			if t.IsHost(nb) {
				return Element{ElemHostPort, l}, nil
			}
			return Element{ElemLink, l}, nil
		}
	}
	return Element{}, fmt.Errorf("topology: no link between %s and %s", a, b)
}

func (t *Topology) findNode(s string) (NodeID, error) {
	if h, ok := strings.CutPrefix(s, "h"); ok {
		n, err := strconv.Atoi(h)
		if err != nil || n < 0 || n >= t.Hosts {
			return 0, fmt.Errorf("topology: no host %q (hosts are h0..h%d)", s, t.Hosts-1)
		}
		return NodeID(n), nil
	}
	parts := strings.Split(s, "-")
	bad := fmt.Errorf("topology: no switch %q (names look like t1-p0-5, or t1-5 with one plane)", s)
	if len(parts) < 2 || len(parts) > 3 || len(parts[0]) != 2 || parts[0][0] != 't' {
		return 0, bad
	}
	tier := int(parts[0][1] - '0')
	plane := 0
	if len(parts) == 3 {
		p, ok := strings.CutPrefix(parts[1], "p")
		v, err := strconv.Atoi(p)
		if !ok || err != nil {
			return 0, bad
		}
		plane = v
	}
	idx, err := strconv.Atoi(parts[len(parts)-1])
	if err != nil || tier < 0 || tier > 2 || plane < 0 || plane >= t.Planes || idx < 0 || idx >= t.tierCount[tier] {
		return 0, bad
	}
	return t.Node(t.tierStart[plane][tier] + idx), nil
}
