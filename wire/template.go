package wire

import "encoding/binary"

// DataTemplate writes data packets (the six WRITE opcodes) and SACKs
// from a template of their headers: the bytes that stay the same from one
// packet of an endpoint to the next (IPv6 next headers and hop limits,
// the UDP destination port, the default P_Key, the TSETH's ftype) are
// written once, by NewDataTemplate, and Append copies them and patches
// the rest — addresses, EV, traffic class, lengths, the BTH's opcode,
// flags, QP and PSN, and the METH, TSETH, RETH and immediate — before it
// adds the payload, pad, ICRC and UDP checksum; AppendSACK patches the
// SETH and CC_STATE in the same way. A packet it writes is byte for byte
// the one AppendPacket writes for the same fields, BTH bits it has no
// field for (SE, M, TVer, Resv8a, Resv) zero (TestDataTemplate,
// TestDataTemplateSACK, FuzzDataTemplate); it saves AppendPacket's walk
// through a Packet.
//
// A DataTemplate is a plain value, read-only once made.
type DataTemplate struct {
	hdr   [dataHeaderMax]byte
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

// The longest headers a template writes (a data packet's or a SACK's):
// outer and inner IPv6, and from the UDP header on.
const (
	dataFromUDPMax = UDPLen + BTHLen + max(METHLen+TSETHLen+RETHLen+ImmDtLen, SACKLen)
	dataInnerMax   = IPv6Len + dataFromUDPMax
	dataHeaderMax  = IPv6Len + dataInnerMax
)

// Len returns the length of a datagram Append writes with opcode op and
// n bytes of payload, as its length fields declare it (Packet.Len).
func (t *DataTemplate) Len(op Opcode, n int) int {
	return t.ip + IPv6Len + UDPLen + op.HeaderLen(t.ts) + n + pad(n) + ICRCLen
}

// Append appends the data packet f describes, with payload, to b and
// returns the extended slice, as AppendPacket does (phantom payloads
// included). f.Opcode must be a data opcode. It does not allocate when b
// has room.
func (t *DataTemplate) Append(b []byte, f *DataFields, payload []byte) []byte {
	n := max(f.PayloadLen, len(payload))
	x := f.Opcode.exts(t.ts)
	udpLen := UDPLen + BTHLen + int(x.Len) + n + pad(n) + ICRCLen
	udpOff := len(b) + t.ip + IPv6Len
	b, u := t.head(b, f, udpLen)
	const bth = UDPLen
	ack := flag(t.ts, bthTS)
	if f.AckReq {
		ack |= bthAckReq
	}
	if f.Rtx {
		ack |= bthRtx
	}
	binary.BigEndian.PutUint16(u[bth+bthOffOpcode:], uint16(f.Opcode)<<8|uint16(pad(n))<<bthPadShift)
	binary.BigEndian.PutUint32(u[bth+bthOffResv8a:], f.DestQP&QPNMask)
	binary.BigEndian.PutUint32(u[bth+bthOffAck:], uint32(ack)<<24|f.PSN&PSNMask)
	const ext = bth + BTHLen
	binary.BigEndian.PutUint16(u[ext+methOffRQMSN:], f.METH.RQMSN)
	binary.BigEndian.PutUint16(u[ext+methOffMSN:], f.METH.MSN)
	reth := ext + METHLen
	if t.ts {
		binary.BigEndian.PutUint16(u[ext+METHLen+tsethOffTimestamp:], f.TxTimestamp)
		reth += TSETHLen
	}
	r := (*[RETHLen + ImmDtLen]byte)(u[reth:])
	binary.BigEndian.PutUint64(r[rethOffVA:], f.RETH.VA)
	binary.BigEndian.PutUint32(r[rethOffRKey:], f.RETH.RKey)
	binary.BigEndian.PutUint32(r[rethOffDMALen:], f.RETH.DMALen)
	if x.ImmDt >= 0 {
		binary.BigEndian.PutUint32(r[RETHLen:], uint32(f.Imm))
	}
	b = b[:udpOff+udpLen-n-pad(n)-ICRCLen]
	if n > len(payload) {
		return b // phantom payload
	}
	return appendWhole(b, udpOff, udpLen, f.Src, f.Dst, payload, t.noCRC)
}

// AppendSACK appends the SACK packet (OpSACK, no BTH flags) with s as its
// SETH and CC_STATE to b and returns the extended slice, as AppendPacket
// does. Of f only the addresses, TrafficClass, EV, DestQP and PSN count.
func (t *DataTemplate) AppendSACK(b []byte, f *DataFields, s *SACK) []byte {
	const udpLen = UDPLen + BTHLen + SACKLen + ICRCLen
	udpOff := len(b) + t.ip + IPv6Len
	b, u := t.head(b, f, udpLen)
	binary.BigEndian.PutUint16(u[UDPLen+bthOffOpcode:], uint16(OpSACK)<<8)
	binary.BigEndian.PutUint32(u[UDPLen+bthOffResv8a:], f.DestQP&QPNMask)
	binary.BigEndian.PutUint32(u[UDPLen+bthOffAck:], f.PSN&PSNMask)
	ext := u[UDPLen+BTHLen : UDPLen+BTHLen+SACKLen]
	s.put(ext)
	b = b[:udpOff+udpLen-ICRCLen]
	return appendWhole(b, udpOff, udpLen, f.Src, f.Dst, nil, t.noCRC)
}

// head writes the template's headers to b's end, with f's addresses,
// traffic class and EV and the lengths of a UDP datagram of udpLen
// bytes, up to the UDP header, and returns b extended by room for the
// longest headers and the bytes from the UDP header on.
func (t *DataTemplate) head(b []byte, f *DataFields, udpLen int) ([]byte, *[dataFromUDPMax]byte) {
	// Room for the longest headers, written through fixed-size arrays
	// (no bounds check per field), then cut to these.
	b, w := grow(b, dataHeaderMax)
	h := (*[dataHeaderMax]byte)(w)
	*h = t.hdr
	sport, flow := SplitEV(f.EV)
	vtf := ipv6Version<<28 | uint32(f.TrafficClass)<<20 | flow&FlowLabelMask
	dst := &f.Dst
	switch t.encap {
	case DataUSID:
		dst = &f.Via
	case DataEncapsulated:
		binary.BigEndian.PutUint32(h[:], vtf)
		binary.BigEndian.PutUint16(h[ipv6OffPayloadLen:], uint16(IPv6Len+udpLen))
		*(*[16]byte)(h[ipv6OffSrc:]) = f.Src
		*(*[16]byte)(h[ipv6OffDst:]) = f.Via
	}
	ip := (*[dataInnerMax]byte)(h[t.ip:])
	binary.BigEndian.PutUint32(ip[:], vtf)
	binary.BigEndian.PutUint16(ip[ipv6OffPayloadLen:], uint16(udpLen))
	*(*[16]byte)(ip[ipv6OffSrc:]) = f.Src
	*(*[16]byte)(ip[ipv6OffDst:]) = *dst
	u := (*[dataFromUDPMax]byte)(ip[IPv6Len:])
	binary.BigEndian.PutUint16(u[udpOffSrcPort:], sport)
	binary.BigEndian.PutUint16(u[udpOffLength:], uint16(udpLen))
	return b, u
}
