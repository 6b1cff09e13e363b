package wire

import "encoding/binary"

// DataTemplate writes data packets (the six WRITE opcodes) from a template
// of their headers: the bytes that stay the same from one packet of an
// endpoint to the next (IPv6 next headers and hop limits, the UDP
// destination port, the default P_Key, the TSETH's ftype) are written
// once, by NewDataTemplate, and Append copies them and patches the rest —
// addresses, EV, traffic class, lengths, the BTH's opcode, flags, QP and
// PSN, and the METH, TSETH, RETH and immediate — before it adds the
// payload, pad, ICRC and UDP checksum. A packet it writes is byte for byte
// the one AppendPacket writes for the same fields, BTH bits it has no
// field for (SE, M, TVer, Resv8a, Resv) zero (TestDataTemplate,
// FuzzDataTemplate); it saves AppendPacket's walk through a Packet.
//
// A DataTemplate is a plain value, read-only once made.
type DataTemplate struct {
	hdr   [2*IPv6Len + UDPLen + BTHLen + METHLen + TSETHLen + RETHLen + ImmDtLen]byte
	encap DataEncap
	ts    bool // a TSETH follows the METH (BTH.TS)
	noCRC bool // as Packet.NoCRC
	ip    int  // offset of the IPv6 header that carries UDP
}

// DataEncap is how a DataTemplate's packets travel (Packet describes the
// three encapsulations).
type DataEncap uint8

const (
	// DataPlain is IP | UDP to the final destination.
	DataPlain DataEncap = iota
	// DataUSID is IP | UDP to a uSID container (DataFields.Via), whose
	// last CSID is the final destination.
	DataUSID
	// DataEncapsulated is Outer | IP | UDP: the outer header to a uSID
	// container (DataFields.Via), the inner one to the final destination.
	DataEncapsulated
)

// DataFields are what differs from one data packet to the next.
type DataFields struct {
	Src, Dst [16]byte // source, final destination
	// Via is the uSID container the packet is routed by: the destination
	// of IP for DataUSID, of Outer for DataEncapsulated. DataPlain
	// ignores it.
	Via          [16]byte
	TrafficClass uint8 // of every IPv6 header
	EV           EV    // in the UDP source port and every flow label
	Opcode       Opcode
	AckReq, Rtx  bool
	DestQP, PSN  uint32
	METH         METH
	TxTimestamp  uint16 // the TSETH's, when the template has TS
	RETH         RETH
	Imm          ImmDt // with an opcode that HasImm
	// PayloadLen is the declared payload length, as in Packet: when it
	// exceeds len(payload) the payload is phantom.
	PayloadLen int
}

// NewDataTemplate returns the template for data packets in encapsulation
// encap, with a TSETH if ts, and with a zero ICRC and UDP checksum if
// noCRC (as Packet.NoCRC).
func NewDataTemplate(encap DataEncap, ts, noCRC bool) DataTemplate {
	t := DataTemplate{encap: encap, ts: ts, noCRC: noCRC}
	h := t.hdr[:]
	if encap == DataEncapsulated {
		h[ipv6OffNextHeader], h[ipv6OffHopLimit] = ProtoIPv6, dataHopLimit
		t.ip = IPv6Len
	}
	ip := h[t.ip:]
	ip[ipv6OffNextHeader], ip[ipv6OffHopLimit] = ProtoUDP, dataHopLimit
	u := ip[IPv6Len:]
	binary.BigEndian.PutUint16(u[udpOffDstPort:], UDPPortRoCEv2)
	bth := u[UDPLen:]
	binary.BigEndian.PutUint16(bth[bthOffPKey:], PKeyDefault)
	if ts {
		(&TSETH{FType: TSETHFType}).put(bth[BTHLen+METHLen:])
	}
	return t
}

// dataHopLimit is the hop limit of every IPv6 header of a data packet.
const dataHopLimit = 64

// Append appends the data packet f describes, with payload, to b and
// returns the extended slice, as AppendPacket does (phantom payloads
// included). f.Opcode must be a data opcode. It does not allocate when b
// has room.
func (t *DataTemplate) Append(b []byte, f *DataFields, payload []byte) []byte {
	n := max(f.PayloadLen, len(payload))
	x := f.Opcode.exts(t.ts)
	hlen := BTHLen + int(x.Len)
	udpLen := UDPLen + hlen + n + pad(n) + ICRCLen
	udpOff := t.ip + IPv6Len
	start := len(b)
	b, w := grow(b, udpOff+UDPLen+hlen)
	copy(w, t.hdr[:])
	sport, flow := SplitEV(f.EV)
	vtf := ipv6Version<<28 | uint32(f.TrafficClass)<<20 | flow&FlowLabelMask
	dst := &f.Dst
	switch t.encap {
	case DataUSID:
		dst = &f.Via
	case DataEncapsulated:
		binary.BigEndian.PutUint32(w, vtf)
		binary.BigEndian.PutUint16(w[ipv6OffPayloadLen:], uint16(IPv6Len+udpLen))
		copy(w[ipv6OffSrc:ipv6OffDst], f.Src[:])
		copy(w[ipv6OffDst:IPv6Len], f.Via[:])
	}
	ip := w[t.ip : t.ip+IPv6Len]
	binary.BigEndian.PutUint32(ip, vtf)
	binary.BigEndian.PutUint16(ip[ipv6OffPayloadLen:], uint16(udpLen))
	copy(ip[ipv6OffSrc:ipv6OffDst], f.Src[:])
	copy(ip[ipv6OffDst:], dst[:])
	u := w[udpOff : udpOff+UDPLen+hlen]
	binary.BigEndian.PutUint16(u[udpOffSrcPort:], sport)
	binary.BigEndian.PutUint16(u[udpOffLength:], uint16(udpLen))
	bth := u[UDPLen:]
	bth[bthOffOpcode] = byte(f.Opcode)
	bth[bthOffFlags] = uint8(pad(n)) << bthPadShift
	put24(bth[bthOffDestQP:], f.DestQP)
	bth[bthOffAck] = flag(f.AckReq, bthAckReq) | flag(f.Rtx, bthRtx) | flag(t.ts, bthTS)
	put24(bth[bthOffPSN:], f.PSN)
	ext := bth[BTHLen:]
	f.METH.put(ext[x.METH:])
	if t.ts {
		binary.BigEndian.PutUint16(ext[x.TSETH+tsethOffTimestamp:], f.TxTimestamp)
	}
	f.RETH.put(ext[x.RETH:])
	if x.ImmDt >= 0 {
		f.Imm.put(ext[x.ImmDt:])
	}
	if n > len(payload) {
		return b // phantom payload
	}
	return appendWhole(b, start+udpOff, udpLen, f.Src, f.Dst, payload, t.noCRC)
}
