package dump

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/roce"
	"github.com/openmrc/mrc/wire"
)

// Options configure decoding. The zero value decodes UDP port 4791 and
// reads uSID containers in the F3216 format MRC deploys.
type Options struct {
	// Ports are the UDP destination ports decoded as MRC (default 4791).
	Ports []uint16
	// USID is the uSID container format of destination addresses, used
	// to show their CSIDs and to find the final destination over which
	// inline-uSID packets' checksums are computed (default wire.F3216).
	USID wire.USIDFormat
}

func (o *Options) ports() []uint16 {
	if len(o.Ports) == 0 {
		return []uint16{wire.UDPPortRoCEv2}
	}
	return o.Ports
}

func (o *Options) usid() wire.USIDFormat {
	if o.USID == (wire.USIDFormat{}) {
		return wire.F3216
	}
	return o.USID
}

// internalError starts the problem a decoder panic is turned into; the
// fuzz test treats it as a failure.
const internalError = "internal error"

type decoder struct {
	f   *Frame
	o   *Options
	b   []byte // the captured bytes
	end int    // end of the datagram as its outermost length field declares it
}

func (d *decoder) problem(format string, args ...any) {
	d.f.Problems = append(d.f.Problems, fmt.Sprintf(format, args...))
}

// truncated reports a header cut short by the end of the capture, and
// whether that is because the capture was limited (snap length) rather
// than damaged.
func (d *decoder) truncated(what string, off, need int) {
	have := max(len(d.b)-off, 0)
	why := "capture ends"
	if d.f.Len > d.f.CapLen {
		why = "capture limited to " + fmt.Sprint(d.f.CapLen) + " bytes"
	}
	d.problem("truncated %s: %s after %d of its %d bytes", what, why, have, need)
}

// Decode decodes one captured packet of link type lt: b holds the bytes
// captured, origLen is its length on the wire. It never panics. The
// capture metadata (Number, TimeNS, Interface, ...) is left for the
// caller.
func Decode(lt pcap.LinkType, b []byte, origLen int, o *Options) (f *Frame) {
	if o == nil {
		o = &Options{}
	}
	f = &Frame{CapLen: len(b), Len: max(origLen, len(b))}
	d := &decoder{f: f, o: o, b: b}
	defer func() {
		if r := recover(); r != nil {
			d.problem("%s: decoder panic: %v", internalError, r)
		}
		f.Summary = summary(f)
	}()
	et, off, ok := d.link(lt)
	if !ok {
		return f
	}
	switch et {
	case pcap.EtherTypeIPv6:
		d.ipv6(off)
	case pcap.EtherTypeIPv4:
		d.ipv4(off)
	default:
		d.problem("not MRC: not IP (EtherType %#04x)", et)
	}
	if d.end > 0 && d.end < len(b) {
		f.Link.Padding = len(b) - d.end
	}
	return f
}

// link decodes the link-layer header and returns the EtherType of what
// follows and its offset.
func (d *decoder) link(lt pcap.LinkType) (et uint16, off int, ok bool) {
	b := d.b
	l := &Link{Type: lt.String()}
	d.f.Link = l
	switch lt {
	case pcap.LinkEthernet:
		if len(b) < pcap.EthernetLen {
			d.truncated("Ethernet header", 0, pcap.EthernetLen)
			return 0, 0, false
		}
		l.Dst, l.Src = mac(b[0:6]), mac(b[6:12])
		et, off = binary.BigEndian.Uint16(b[12:]), pcap.EthernetLen
		for et == pcap.EtherTypeVLAN || et == pcap.EtherTypeQinQ {
			if len(b) < off+4 {
				d.truncated("VLAN tag", off, 4)
				return 0, 0, false
			}
			l.VLANs = append(l.VLANs, int(binary.BigEndian.Uint16(b[off:])&0xFFF))
			et = binary.BigEndian.Uint16(b[off+2:])
			off += 4
		}
	case pcap.LinkLinuxSLL:
		if len(b) < 16 {
			d.truncated("Linux cooked header", 0, 16)
			return 0, 0, false
		}
		et, off = binary.BigEndian.Uint16(b[14:]), 16
	case pcap.LinkLinuxSLL2:
		if len(b) < 20 {
			d.truncated("Linux cooked v2 header", 0, 20)
			return 0, 0, false
		}
		et, off = binary.BigEndian.Uint16(b[0:]), 20
	case pcap.LinkNull, pcap.LinkLoop:
		if len(b) < 4 {
			d.truncated("loopback header", 0, 4)
			return 0, 0, false
		}
		af := binary.BigEndian.Uint32(b)
		if lt == pcap.LinkNull && af > 0xFFFF {
			af = binary.LittleEndian.Uint32(b) // host byte order of the capturer
		}
		switch af {
		case 2:
			et = pcap.EtherTypeIPv4
		case 10, 24, 28, 30: // AF_INET6 on Linux, the BSDs, macOS
			et = pcap.EtherTypeIPv6
		default:
			d.problem("not MRC: loopback address family %d", af)
			return 0, 0, false
		}
		off = 4
	case pcap.LinkRaw, pcap.LinkIPv4, pcap.LinkIPv6:
		if len(b) == 0 {
			d.truncated("IP header", 0, 1)
			return 0, 0, false
		}
		et = pcap.EtherTypeIPv6
		if b[0]>>4 == 4 {
			et = pcap.EtherTypeIPv4
		}
	default:
		d.problem("link type %d not decoded", uint16(lt))
		return 0, 0, false
	}
	l.EtherType = int(et)
	return et, off, true
}

// ipv6 decodes the IPv6 header chain at off up to UDP.
func (d *decoder) ipv6(off int) {
	b := d.b
	var outer *wire.IPv6
	var carrier wire.IPv6 // the header that carries UDP
	var srh *wire.SRH
	for depth := 0; ; depth++ {
		if len(b) < off+wire.IPv6Len {
			d.truncated("IPv6 header", off, wire.IPv6Len)
			return
		}
		var h wire.IPv6
		if _, err := h.Decode(b[off:]); err != nil {
			d.problem("not MRC: IP version %d where IPv6 was expected", b[off]>>4)
			return
		}
		d.f.IP = append(d.f.IP, d.ipv6Header(&h))
		if depth == 0 {
			outer = &h
			d.end = off + wire.IPv6Len + int(h.PayloadLen)
			if h.PayloadLen == 0 {
				d.problem("IPv6 payload length 0 (jumbogram or hop-by-hop options) not decoded")
				return
			}
		} else if off+wire.IPv6Len+int(h.PayloadLen) != d.end {
			d.problem("inconsistent lengths: inner IPv6 payload length %d does not end where the outer header's does", h.PayloadLen)
		}
		carrier = h
		off += wire.IPv6Len
		nh := h.NextHeader
		if nh == wire.ProtoRouting {
			if srh != nil {
				d.problem("second routing header not decoded")
				return
			}
			var s wire.SRH
			n, err := s.Decode(b[off:])
			switch {
			case errors.Is(err, wire.ErrTruncated):
				need := wire.SRHFixedLen
				if len(b) >= off+2 {
					need = 8 * (int(b[off+1]) + 1)
				}
				d.truncated("SRH", off, need)
				return
			case errors.Is(err, wire.ErrUnsupported):
				d.problem("not MRC: routing header type %d not decoded", b[off+2])
				return
			case err != nil:
				d.problem("malformed SRH: %v", err)
				return
			}
			srh = &s
			d.f.SRH = srhOf(&s)
			off += n
			nh = s.NextHeader
		}
		switch nh {
		case wire.ProtoIPv6:
			if depth > 0 {
				d.problem("nested IPv6-in-IPv6 encapsulation not decoded")
				return
			}
			continue
		case wire.ProtoUDP:
		default:
			d.problem("not MRC: IPv6 next header %d", nh)
			return
		}
		break
	}
	// The final destination, for the checksums: an SRH's last segment
	// unless encapsulated (RFC 8200 §8.1), else the carrier's destination.
	finals := [][16]byte{carrier.Dst}
	encap := len(d.f.IP) > 1
	if srh != nil && !encap && srh.N > 0 {
		finals[0] = srh.Segments[0]
	}
	if !encap {
		if f := d.o.usid().Final(finals[0]); f != finals[0] && f != [16]byte{} {
			finals = append(finals, f) // an inline-uSID destination
		}
	}
	fl := carrier.FlowLabel
	if outer != nil {
		fl = outer.FlowLabel // what the fabric hashes
	}
	d.udp(off, true, fl, func(udp []byte) uint16 {
		for _, fd := range finals {
			if c := wire.UDPChecksum(carrier.Src, fd, udp); c == binary.BigEndian.Uint16(udp[6:]) {
				return c
			}
		}
		return wire.UDPChecksum(carrier.Src, finals[0], udp)
	}, func(udp []byte) uint32 {
		want := binary.LittleEndian.Uint32(udp[len(udp)-wire.ICRCLen:])
		for _, fd := range finals {
			if c := wire.ICRC(carrier.Src, fd, udp[:len(udp)-wire.ICRCLen]); c == want {
				return c
			}
		}
		return wire.ICRC(carrier.Src, finals[0], udp[:len(udp)-wire.ICRCLen])
	})
}

func (d *decoder) ipv6Header(h *wire.IPv6) *IP {
	ip := &IP{
		Version:    6,
		DSCP:       int(h.DSCP()),
		ECN:        h.ECN().String(),
		FlowLabel:  int(h.FlowLabel),
		PayloadLen: int(h.PayloadLen),
		NextHeader: int(h.NextHeader),
		HopLimit:   int(h.HopLimit),
		Src:        addr(h.Src),
		Dst:        addr(h.Dst),
	}
	f := d.o.usid()
	for i := range f.Slots() {
		c := f.CSID(h.Dst, i)
		if c == 0 {
			break
		}
		ip.USIDs = append(ip.USIDs, int(c))
	}
	if len(ip.USIDs) > 0 {
		blk := f.Container(h.Dst)
		ip.USIDBlock = addr(blk)
	}
	return ip
}

func (d *decoder) ipv4(off int) {
	b := d.b
	if len(b) < off+20 {
		d.truncated("IPv4 header", off, 20)
		return
	}
	if b[off]>>4 != 4 {
		d.problem("not MRC: IP version %d where IPv4 was expected", b[off]>>4)
		return
	}
	ihl := int(b[off]&0xF) * 4
	total := int(binary.BigEndian.Uint16(b[off+2:]))
	ip := &IP{
		Version:      4,
		DSCP:         int(b[off+1] >> 2),
		ECN:          wire.ECN(b[off+1] & 3).String(),
		PayloadLen:   total - ihl,
		NextHeader:   int(b[off+9]),
		HopLimit:     int(b[off+8]),
		Src:          netip.AddrFrom4([4]byte(b[off+12 : off+16])).String(),
		Dst:          netip.AddrFrom4([4]byte(b[off+16 : off+20])).String(),
		IPv4Checksum: int(binary.BigEndian.Uint16(b[off+10:])),
	}
	d.f.IP = append(d.f.IP, ip)
	if ihl < 20 || total < ihl {
		d.problem("malformed IPv4 header: header length %d, total length %d", ihl, total)
		return
	}
	if len(b) < off+ihl {
		d.truncated("IPv4 options", off, ihl)
		return
	}
	d.end = off + total
	if frag := binary.BigEndian.Uint16(b[off+6:]); frag&0x3FFF != 0 {
		d.problem("IPv4 fragment not decoded")
		return
	}
	if ip.NextHeader != wire.ProtoUDP {
		d.problem("not MRC: IPv4 protocol %d", ip.NextHeader)
		return
	}
	src, dst := b[off+12:off+16], b[off+16:off+20]
	d.udp(off+ihl, false, 0, func(udp []byte) uint16 {
		var sum uint32
		add := func(p []byte) {
			for i := 0; i+1 < len(p); i += 2 {
				sum += uint32(binary.BigEndian.Uint16(p[i:]))
			}
			if len(p)%2 == 1 {
				sum += uint32(p[len(p)-1]) << 8
			}
		}
		add(src)
		add(dst)
		sum += wire.ProtoUDP + uint32(len(udp))
		add(udp[:6])
		add(udp[8:])
		for sum>>16 != 0 {
			sum = sum&0xFFFF + sum>>16
		}
		c := ^uint16(sum)
		if c == 0 {
			c = 0xFFFF
		}
		return c
	}, nil)
}

// udp decodes the UDP header at off and the MRC packet in it. v6 says
// whether IP is IPv6 (fl is then the flow label that carries EV[15:0]).
// csum computes the UDP checksum of a whole datagram; icrc computes the
// ICRC (nil: not verifiable).
func (d *decoder) udp(off int, v6 bool, fl uint32, csum func([]byte) uint16, icrc func([]byte) uint32) {
	b := d.b
	if len(b) < off+wire.UDPLen {
		d.truncated("UDP header", off, wire.UDPLen)
		return
	}
	var u wire.UDP
	_, _ = u.Decode(b[off:])
	d.f.UDP = &UDP{SrcPort: int(u.SrcPort), DstPort: int(u.DstPort), Length: int(u.Length),
		Checksum: &Checksum{Value: fmt.Sprintf("0x%04x", u.Checksum)}}
	if !slices.Contains(d.o.ports(), u.DstPort) {
		d.problem("not MRC: UDP destination port %d", u.DstPort)
		return
	}
	udpEnd := off + int(u.Length)
	consistent := int(u.Length) >= wire.UDPLen && udpEnd == d.end
	if !consistent {
		d.problem("inconsistent lengths: UDP length %d does not end where the IP header's length does", u.Length)
		if int(u.Length) < wire.UDPLen {
			return
		}
		udpEnd = min(udpEnd, d.end) // decode what the IP header bounds; verify nothing
	}
	if v6 {
		ev := wire.JoinEV(u.SrcPort, fl)
		d.f.EV = evOf(uint32(ev))
	}
	off += wire.UDPLen
	if len(b) < off+wire.BTHLen {
		d.truncated("BTH", off, wire.BTHLen)
		return
	}
	var h wire.BTH
	_, _ = h.Decode(b[off:])
	d.f.BTH = bthOf(&h)
	op := h.Opcode
	var hdrEnd int
	var isData bool
	switch rop := roce.Opcode(op); {
	case op.Known():
		d.f.MRC = true
		hdrEnd, isData = off+op.HeaderLen(h.TS), op.IsData()
		if !d.ext(&h, off+wire.BTHLen) {
			return
		}
	case rop.Known():
		// A RoCEv2 RC packet (our baseline's): its UDP source port is an
		// ECMP hash, not an EV.
		d.f.RoCE, d.f.EV = true, nil
		hdrEnd, isData = off+rop.HeaderLen(), rop.IsData()
		if !d.roceExt(rop, off+wire.BTHLen) {
			return
		}
	case op>>5 == 0b110:
		d.problem("unknown MRC opcode %#02x", uint8(op))
		return
	default:
		d.problem("not MRC: RoCE opcode %#02x not decoded", uint8(op))
		return
	}
	if hdrEnd > udpEnd {
		d.problem("inconsistent lengths: UDP length %d ends inside the MRC headers", u.Length)
		return
	}
	rem := udpEnd - hdrEnd
	have := len(b) // captured bytes of the frame
	opName := d.f.BTH.OpcodeName
	switch {
	case rem == 0 && isData && d.f.MRC:
		d.f.Trimmed = true
	case rem == 0:
		d.problem("no ICRC: the UDP length ends right after the %s headers", opName)
	case rem < int(h.PadCnt)+wire.ICRCLen:
		d.problem("inconsistent lengths: %d bytes after the headers cannot hold pad %d and the ICRC", rem, h.PadCnt)
		return
	default:
		n := rem - int(h.PadCnt) - wire.ICRCLen
		if n > 0 || isData {
			d.f.Data = &Payload{Len: n, Captured: min(max(have-hdrEnd, 0), n), Pad: int(h.PadCnt)}
		} else if h.PadCnt != 0 {
			d.problem("pad count %d on a packet without payload", h.PadCnt)
		}
		if n > 0 && !isData {
			d.problem("%d bytes of payload on a %s packet", n, opName)
		}
	}
	if !consistent {
		d.f.UDP.Checksum.Note = "not verified: inconsistent lengths"
		return
	}
	if have < udpEnd {
		// Part of the datagram is not in the capture.
		missing := udpEnd - have
		if d.f.Len-d.f.CapLen >= missing {
			if d.f.Data != nil {
				d.f.Data.NotCaptured = missing
			}
		} else if isData && d.f.MRC && wire.DefaultDSCP.IsTrim(uint8(d.f.IP[0].DSCP)) {
			// A fixed-size trim: the switch cut the frame and left the
			// lengths as they were (docs/spec-gaps.md row 22).
			d.f.Trimmed, d.f.CutTo = true, d.f.Len
		} else {
			d.problem("truncated datagram: %d bytes the length fields declare are missing from the frame", missing-(d.f.Len-d.f.CapLen))
		}
	}

	// Checksums, when the whole datagram is here.
	udp := b[off-wire.UDPLen : min(udpEnd, have)]
	ck := d.f.UDP.Checksum
	switch {
	case have < udpEnd && u.Checksum == 0:
		ck.Note = "zero: not computed (phantom payload)"
	case have < udpEnd:
		ck.Note = "not verified: datagram not captured in full"
	case u.Checksum == 0 && v6:
		ck.OK = ptr(false)
		ck.Note = "zero checksum is invalid over IPv6"
		d.problem("UDP checksum is zero")
	case u.Checksum == 0:
		ck.Note = "zero: not computed"
	default:
		c := csum(udp)
		ck.OK = ptr(c == u.Checksum)
		if c != u.Checksum {
			ck.Note = fmt.Sprintf("computed 0x%04x", c)
			d.problem("UDP checksum mismatch: 0x%04x on the wire, 0x%04x computed", u.Checksum, c)
		}
	}
	if rem < wire.ICRCLen || have < udpEnd {
		return
	}
	v := binary.LittleEndian.Uint32(udp[len(udp)-wire.ICRCLen:])
	d.f.ICRC = &Checksum{Value: fmt.Sprintf("0x%08x", v)}
	if icrc == nil {
		d.f.ICRC.Note = "not verified over IPv4"
		return
	}
	c := icrc(udp)
	d.f.ICRC.OK = ptr(c == v)
	if c != v {
		d.f.ICRC.Note = fmt.Sprintf("computed 0x%08x", c)
		d.problem("ICRC mismatch: 0x%08x on the wire, 0x%08x computed", v, c)
	}
}

// ext decodes the extension headers of h's opcode starting at off. It
// reports false when the capture ends inside them.
func (d *decoder) ext(h *wire.BTH, off int) bool {
	b := d.b
	f := d.f
	x := h.Opcode.Exts(h.TS)
	if x.METH >= 0 {
		if !d.need("METH", off+int(x.METH), wire.METHLen) {
			return false
		}
		var m wire.METH
		must(m.Decode(b[off+int(x.METH):]))
		f.METH = &METH{RQMSN: int(m.RQMSN), MSN: int(m.MSN)}
	}
	if x.TSETH >= 0 {
		if !d.need("TSETH", off+int(x.TSETH), wire.TSETHLen) {
			return false
		}
		var t wire.TSETH
		must(t.Decode(b[off+int(x.TSETH):]))
		f.TSETH = tsethOf(&t)
	}
	if at := off + int(x.RETH); x.RETH >= 0 && !d.reth(&at) {
		return false
	}
	if at := off + int(x.ImmDt); x.ImmDt >= 0 && !d.immdt(&at) {
		return false
	}
	if at := off + int(x.AETH); x.AETH >= 0 {
		return d.aeth(&at)
	}
	if at := off + int(x.SACK); x.SACK >= 0 {
		if !d.need("SETH+CC_STATE", at, wire.SACKLen) {
			return false
		}
		var s wire.SACK
		must(s.Decode(b[at:]))
		f.SACK = sackOf(&s)
	}
	if at := off + int(x.NACK); x.NACK >= 0 {
		if !d.need("NETH", at, wire.NETHLen) {
			return false
		}
		var n wire.NACK
		must(n.Decode(b[at:]))
		f.NACK = &NACK{Type: int(n.Type), NextHdr: int(n.NextHdr), Resv1: int(n.Resv1), CE: n.CE, Reason: int(n.Reason),
			ReasonName: n.Reason.String(), VendorInfo: int(n.VendorInfo), Entropy: evOf(uint32(n.Entropy)),
			SPDCID: int(n.SPDCID), DPDCID: int(n.DPDCID), Resv12: int(n.Resv12), NackPSN: int(n.NackPSN),
			CCType: int(n.CCType), CCFlags: int(n.CCFlags), Resv17: int(n.Resv17), TxTimestamp: int(n.TxTimestamp)}
	}
	if at := off + int(x.Probe); x.Probe >= 0 {
		if !d.need("PETH", at, wire.PETHLen) {
			return false
		}
		var p wire.Probe
		must(p.Decode(b[at:]))
		f.PETH = &PETH{Type: int(p.Type), NextHdr: int(p.NextHdr), Resv1: int(p.Resv1), Resv2: int(p.Resv2),
			VendorInfo: int(p.VendorInfo), ProbeID: int(p.ProbeID), Resv6: int(p.Resv6), SPDCID: int(p.SPDCID),
			DPDCID: int(p.DPDCID), TSETH: *tsethOf(&p.TS)}
	}
	if at := off + int(x.EPReq); x.EPReq >= 0 {
		if !d.need("ERTH", at, wire.ERTHLen) {
			return false
		}
		var r wire.EPRequest
		must(r.Decode(b[at:]))
		f.ERTH = &ERTH{Type: int(r.Type), NextHdr: int(r.NextHdr), Resv1: int(r.Resv1), Op: int(r.Op), OpName: r.Op.String(),
			Resv2: int(r.Resv2), VendorInfo: int(r.VendorInfo), PortStatusMask: r.PortStatusMask,
			PlanesUp: planesUp(r.PortStatusMask), Resv8: r.Resv8, TSETH: *tsethOf(&r.TS)}
	}
	if at := off + int(x.EPResp); x.EPResp >= 0 {
		if !d.need("EETH", at, wire.EETHLen) {
			return false
		}
		var r wire.EPResponse
		must(r.Decode(b[at:]))
		f.EETH = &EETH{Type: int(r.Type), NextHdr: int(r.NextHdr), Resv1: int(r.Resv1), Op: int(r.Op), OpName: r.Op.String(),
			Resv2: int(r.Resv2), PortStatusMask: r.PortStatusMask, PlanesUp: planesUp(r.PortStatusMask),
			Resv8: fmt.Sprintf("%x", r.Resv8), TxTimestamp: int(r.TxTimestamp), Resv30: fmt.Sprintf("%x", r.Resv30)}
	}
	return true
}

// roceExt decodes the extension headers of a RoCEv2 RC packet of opcode
// op starting at off: RETH and ImmDt of the RDMA WRITEs, AETH of an
// ACKNOWLEDGE (a CNP's reserved block shows nowhere). It reports false
// when the capture ends inside them.
func (d *decoder) roceExt(op roce.Opcode, off int) bool {
	if op.HasRETH() && !d.reth(&off) || op.HasImm() && !d.immdt(&off) {
		return false
	}
	if op == roce.OpAck {
		return d.aeth(&off)
	}
	return true
}

// need reports whether n bytes of header name are captured at off, and
// reports the truncation when they are not.
func (d *decoder) need(name string, off, n int) bool {
	if len(d.b) < off+n {
		d.truncated(name, off, n)
		return false
	}
	return true
}

// reth, immdt and aeth decode that header at *off and advance *off past
// it; they report false when the capture ends inside it.
func (d *decoder) reth(off *int) bool {
	if !d.need("RETH", *off, wire.RETHLen) {
		return false
	}
	var r wire.RETH
	*off += must(r.Decode(d.b[*off:]))
	d.f.RETH = &RETH{VA: fmt.Sprintf("0x%016x", r.VA), RKey: r.RKey, DMALen: r.DMALen}
	return true
}

func (d *decoder) immdt(off *int) bool {
	if !d.need("ImmDt", *off, wire.ImmDtLen) {
		return false
	}
	var i wire.ImmDt
	*off += must(i.Decode(d.b[*off:]))
	d.f.ImmDt = &ImmDt{Value: uint32(i)}
	return true
}

func (d *decoder) aeth(off *int) bool {
	if !d.need("AETH", *off, wire.AETHLen) {
		return false
	}
	var a wire.AETH
	*off += must(a.Decode(d.b[*off:]))
	d.f.AETH = &AETH{Syndrome: int(a.Syndrome), SyndromeName: syndromeName(a.Syndrome), MSN: int(a.MSN)}
	return true
}

// must returns n; the decoders cannot fail once the length is checked.
func must(n int, err error) int {
	if err != nil {
		panic(err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }

func evOf(v uint32) *EV {
	return &EV{Value: v, Hex: wire.EV(v).String(), Plane: wire.EV(v).Plane(), Path: wire.EV(v).Path()}
}

func bthOf(h *wire.BTH) *BTH {
	return &BTH{Opcode: int(h.Opcode), OpcodeName: opcodeName(h.Opcode), SE: h.SE, M: h.MigReq, PadCnt: int(h.PadCnt),
		TVer: int(h.TVer), PKey: int(h.PKey), Resv8a: int(h.Resv8a), DestQP: int(h.DestQP), A: h.AckReq,
		Rtx: h.Rtx, TS: h.TS, Resv: int(h.Resv), PSN: int(h.PSN)}
}

func tsethOf(t *wire.TSETH) *TSETH {
	return &TSETH{TxTimestamp: int(t.TxTimestamp), TSR: t.TSR, Resv: int(t.Resv), FType: int(t.FType)}
}

func sackOf(s *wire.SACK) *SACK {
	out := &SACK{Type: int(s.Type), NextHdr: int(s.NextHdr), M: int(s.M), MName: s.M.String(), Resv1: int(s.Resv1),
		PR: s.PR, Rtx: s.Rtx, AckPSNOffset: int(s.AckPSNOffset), AckPSN: int(s.AckPSN()), Entropy: evOf(uint32(s.Entropy)),
		SPDCID: int(s.SPDCID), DPDCID: int(s.DPDCID), Resv12: int(s.Resv12), CackPSN: int(s.CackPSN),
		CCType: int(s.CCType), CCFlags: int(s.CCFlags), MPR: int(s.MPR), SackOffset: int(s.SackOffset),
		SackBase: int(s.Base()), SackBitmap: fmt.Sprintf("0x%016x", s.SackBitmap), Sacked: [][2]int{},
		CCState: CCState{TxTimestamp: int(s.CC.TxTimestamp), Resv: int(s.CC.Resv), OOOCount: int(s.CC.OOOCount),
			RC: s.CC.RC, RcvCwndPen: int(s.CC.RcvCwndPen), RcvdBytes: int(s.CC.RcvdBytes)}}
	base := s.Base()
	for i := 0; i < wire.SACKBitmapBits; i++ {
		if !s.Bit(i) {
			continue
		}
		j := i
		for j+1 < wire.SACKBitmapBits && s.Bit(j+1) {
			j++
		}
		out.Sacked = append(out.Sacked, [2]int{int((base + uint32(i)) & wire.PSNMask), int((base + uint32(j)) & wire.PSNMask)})
		i = j
	}
	return out
}

func srhOf(s *wire.SRH) *SRH {
	out := &SRH{NextHeader: int(s.NextHeader), HdrExtLen: int(s.HdrExtLen), RoutingType: wire.RoutingTypeSRH,
		SegmentsLeft: int(s.SegmentsLeft), LastEntry: int(s.LastEntry), Flags: int(s.Flags), Tag: int(s.Tag)}
	for i := range s.N {
		out.Segments = append(out.Segments, addr(s.Segments[i]))
	}
	return out
}

func planesUp(mask uint32) []int {
	planes := []int{}
	for i := range 32 {
		if mask&(1<<i) != 0 {
			planes = append(planes, i)
		}
	}
	return planes
}

// opcodeName names MRC opcodes, and says what other BTH opcodes are.
func opcodeName(op wire.Opcode) string {
	if op.Known() {
		return op.String()
	}
	if rop := roce.Opcode(op); rop.Known() {
		return "RoCE " + rop.String()
	}
	if op < 0xC0 {
		return fmt.Sprintf("RoCE opcode %#02x (not MRC)", uint8(op))
	}
	return fmt.Sprintf("unknown %#02x", uint8(op))
}

func syndromeName(s uint8) string {
	switch {
	case s == wire.AETHAck:
		return "ACK"
	case s == wire.AETHNakPSNSeqError:
		return "NAK PSN_SEQ_ERROR"
	case s == wire.AETHNakInvalidRequest:
		return "NAK INVALID_REQUEST"
	case s == wire.AETHNakRemoteAccess:
		return "NAK REMOTE_ACCESS_ERROR"
	case s == wire.AETHNakRemoteOperation:
		return "NAK REMOTE_OPERATIONAL_ERROR"
	case s>>5&3 == 0:
		return fmt.Sprintf("ACK (credits %d)", s&0x1F)
	case s>>5&3 == 1:
		return "RNR NAK"
	case s>>5&3 == 3:
		return fmt.Sprintf("NAK %#02x", s)
	}
	return fmt.Sprintf("reserved %#02x", s)
}

func addr(a [16]byte) string { return netip.AddrFrom16(a).String() }

func mac(b []byte) string {
	var sb strings.Builder
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%02x", c)
	}
	return sb.String()
}
