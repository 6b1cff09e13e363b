package pcap

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/openmrc/mrc/wire"
)

// OpClass is a class of MRC packets a Filter selects.
type OpClass uint16

const (
	OpData       OpClass = 1 << iota // WRITE_* packets, whole, first transmissions
	OpRetransmit                     // WRITE_* packets with BTH rtx set
	OpTrimmed                        // WRITE_* packets trimmed: cut to their headers, or marked trimmed (default DSCPs)
	OpAck                            // ACKNOWLEDGE
	OpSACK                           // RELIABILITY_SACK
	OpNACK                           // RELIABILITY_NACK
	OpProbe                          // RELIABILITY_PROBE_REQ
	OpEndpoint                       // ENDPOINT_REQUEST and ENDPOINT_RESPONSE
)

type opClassName struct {
	name string
	c    OpClass
}

var opClassNames = []opClassName{{"data", OpData}, {"rtx", OpRetransmit}, {"trimmed", OpTrimmed}, {"ack", OpAck}, {"sack", OpSACK},
	{"nack", OpNACK}, {"probe", OpProbe}, {"endpoint", OpEndpoint}}

// A Filter selects which MRC datagrams a capture records, for
// `--pcap-filter`. Every condition set must hold; the zero Filter matches
// every packet, MRC or not. A datagram that does not decode as MRC
// matches only the zero Filter.
type Filter struct {
	// Ops keeps packets of these classes (0: all).
	Ops OpClass
	// QPNs keeps packets whose BTH destination QP is one of these.
	QPNs []uint32
	// EVs, Planes and Paths keep packets that travel on, or (SACKs and
	// NACKs) report on, one of these EVs, planes or paths (wire.EV.Plane,
	// wire.EV.Path).
	EVs    []wire.EV
	Planes []int
	Paths  []int
	// Addrs keeps packets from or to one of these addresses (the
	// addresses of any of the packet's IPv6 headers, or SRH segments).
	Addrs []netip.Addr
}

// Zero reports whether f matches everything.
func (f *Filter) Zero() bool {
	return f.Ops == 0 && len(f.QPNs) == 0 && len(f.EVs) == 0 && len(f.Planes) == 0 && len(f.Paths) == 0 && len(f.Addrs) == 0
}

// Match reports whether f keeps the datagram pkt (from its outermost IPv6
// header, as WriteDatagram takes it). It does not allocate.
func (f *Filter) Match(pkt []byte) bool {
	if f.Zero() {
		return true
	}
	var p wire.Packet
	if err := p.Decode(pkt); err != nil {
		return false
	}
	return f.MatchPacket(&p)
}

// MatchPacket is Match for a packet already decoded.
func (f *Filter) MatchPacket(p *wire.Packet) bool {
	if f.Ops != 0 && f.Ops&classOf(p) == 0 {
		return false
	}
	if len(f.QPNs) > 0 && !slices.Contains(f.QPNs, p.BTH.DestQP) {
		return false
	}
	ev := p.EV()
	if p.Encap {
		ev = wire.JoinEV(p.UDP.SrcPort, p.Outer.FlowLabel)
	}
	evs := [2]wire.EV{ev, ev}
	switch p.BTH.Opcode {
	case wire.OpSACK:
		evs[1] = p.SACK.Entropy
	case wire.OpNACK:
		evs[1] = p.NACK.Entropy
	}
	if len(f.EVs) > 0 && !slices.Contains(f.EVs, evs[0]) && !slices.Contains(f.EVs, evs[1]) {
		return false
	}
	if len(f.Planes) > 0 && !slices.Contains(f.Planes, evs[0].Plane()) && !slices.Contains(f.Planes, evs[1].Plane()) {
		return false
	}
	if len(f.Paths) > 0 && !slices.Contains(f.Paths, evs[0].Path()) && !slices.Contains(f.Paths, evs[1].Path()) {
		return false
	}
	if len(f.Addrs) > 0 && !f.matchAddr(p) {
		return false
	}
	return true
}

func (f *Filter) matchAddr(p *wire.Packet) bool {
	has := func(a [16]byte) bool { return slices.Contains(f.Addrs, netip.AddrFrom16(a)) }
	if has(p.IP.Src) || has(p.IP.Dst) || p.Encap && (has(p.Outer.Src) || has(p.Outer.Dst)) {
		return true
	}
	if p.HasSRH {
		for i := range min(p.SRH.N, wire.MaxSegments) {
			if has(p.SRH.Segments[i]) {
				return true
			}
		}
	}
	return false
}

func classOf(p *wire.Packet) OpClass {
	switch op := p.BTH.Opcode; {
	case op.IsData() && (p.Trimmed || wire.DefaultDSCP.IsTrim(p.OuterDSCP())):
		return OpTrimmed
	case op.IsData() && p.BTH.Rtx:
		return OpRetransmit
	case op.IsData():
		return OpData
	case op == wire.OpAck:
		return OpAck
	case op == wire.OpSACK:
		return OpSACK
	case op == wire.OpNACK:
		return OpNACK
	case op == wire.OpProbe:
		return OpProbe
	case op == wire.OpEndpointRequest || op == wire.OpEndpointResponse:
		return OpEndpoint
	}
	return 0
}

// ParseFilter parses a capture filter written as space-separated
// clauses, each key=value with comma-separated values:
//
//	op=data,rtx,trimmed,ack,sack,nack,probe,endpoint
//	qpn=0x100,257
//	ev=0xc008102f   plane=0,1   path=47
//	addr=fcbb:0:e010::
//
// The empty string matches everything.
func ParseFilter(s string) (Filter, error) {
	var f Filter
	for _, clause := range strings.Fields(s) {
		key, val, ok := strings.Cut(clause, "=")
		if !ok || val == "" {
			return Filter{}, fmt.Errorf("pcap filter: %q: want key=value", clause)
		}
		for _, v := range strings.Split(val, ",") {
			switch key {
			case "op":
				i := slices.IndexFunc(opClassNames, func(c opClassName) bool { return c.name == v })
				if i < 0 {
					return Filter{}, fmt.Errorf("pcap filter: op %q: want data, rtx, trimmed, ack, sack, nack, probe or endpoint", v)
				}
				f.Ops |= opClassNames[i].c
			case "qpn", "ev":
				n, err := strconv.ParseUint(v, 0, 32)
				if err != nil || key == "qpn" && n > wire.QPNMask {
					return Filter{}, fmt.Errorf("pcap filter: %s %q: not a number", key, v)
				}
				if key == "qpn" {
					f.QPNs = append(f.QPNs, uint32(n))
				} else {
					f.EVs = append(f.EVs, wire.EV(n))
				}
			case "plane", "path":
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return Filter{}, fmt.Errorf("pcap filter: %s %q: not a number", key, v)
				}
				if key == "plane" {
					f.Planes = append(f.Planes, n)
				} else {
					f.Paths = append(f.Paths, n)
				}
			case "addr":
				a, err := netip.ParseAddr(v)
				if err != nil || !a.Is6() || a.Is4In6() {
					return Filter{}, fmt.Errorf("pcap filter: addr %q: not an IPv6 address", v)
				}
				f.Addrs = append(f.Addrs, a)
			default:
				return Filter{}, fmt.Errorf("pcap filter: unknown key %q (keys: op, qpn, ev, plane, path, addr)", key)
			}
		}
	}
	return f, nil
}
