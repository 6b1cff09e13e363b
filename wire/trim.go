package wire

import "encoding/binary"

// Trim trims the data packet pkt in place, as a congested switch does
// instead of dropping it (digest §3.10): it cuts the datagram after its
// last MRC header (the RETH, or the ImmDt of a *_IMM packet), dropping
// payload, pad and ICRC; rewrites the IPv6 payload length of every IPv6
// header and the UDP length; sets the DSCP of the outermost header, and of
// the inner one when encapsulated, to dscp, keeping their ECN bits; and
// makes the UDP checksum match the trimmed datagram. It returns the
// shortened slice, which aliases pkt. The BTH is left alone (its PadCnt
// still describes the original payload). Trimming a trimmed packet only
// sets the DSCP.
//
// The checksum: when pkt holds the whole datagram and a non-zero UDP
// checksum, Trim updates that checksum incrementally (RFC 1624) for the
// removed bytes and the new length. That needs no knowledge of the final
// destination, so it is exact for every encapsulation at any point of the
// path, and a packet that was corrupt stays detectably corrupt. Otherwise
// (a phantom payload, or a zero checksum) Trim computes the checksum of
// the trimmed datagram afresh against the final destination as Decode
// determines it: the inner destination when encapsulated, the last SRH
// segment, or the destination address. Mid-path, an inline-uSID packet's
// final destination is unknown without the format; a simulator trimming
// phantom inline-uSID packets there fixes the checksum with
// Packet.ResolveUSID and AppendPacket instead.
//
// Trim does not allocate. On error pkt is unchanged: the errors of Decode,
// or ErrUnsupported for a packet that is not a data packet.
func Trim(pkt []byte, dscp uint8) ([]byte, error) {
	var p Packet
	if err := p.Decode(pkt); err != nil {
		return pkt, err
	}
	if !p.BTH.Opcode.IsData() {
		return pkt, ErrUnsupported
	}
	udpOff := p.udpOffset()
	setDSCP(pkt, &p, udpOff, dscp)
	if p.Trimmed {
		return pkt, nil
	}
	oldLen := int(p.UDP.Length)
	newLen := p.payloadAt()
	cut := udpOff + newLen
	csum := pkt[udpOff+udpOffChecksum:]
	old := binary.BigEndian.Uint16(csum)
	if p.HasICRC && old != 0 {
		// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), where m is the removed
		// data and the old length (twice: pseudo-header and UDP header),
		// m' the new length (twice).
		s := uint64(^old)
		s = add(s, uint64(^fold(sum(0, pkt[cut:udpOff+oldLen]))))
		s = add(s, 2*uint64(^uint16(oldLen)))
		s = add(s, 2*uint64(newLen))
		binary.BigEndian.PutUint16(csum, finish(s))
	}
	binary.BigEndian.PutUint16(pkt[udpOff+udpOffLength:], uint16(newLen))
	binary.BigEndian.PutUint16(pkt[ipv6OffPayloadLen:], uint16(cut-IPv6Len))
	if p.Encap {
		binary.BigEndian.PutUint16(pkt[udpOff-IPv6Len+ipv6OffPayloadLen:], uint16(newLen))
	}
	if !p.HasICRC || old == 0 {
		binary.BigEndian.PutUint16(csum, UDPChecksum(p.IP.Src, p.Final(), pkt[udpOff:cut]))
	}
	return pkt[:cut], nil
}

// setDSCP sets the DSCP of the outermost header of pkt, and of the inner
// one when p, decoded from pkt, is encapsulated.
func setDSCP(pkt []byte, p *Packet, udpOff int, dscp uint8) {
	SetOuterDSCP(pkt, dscp)
	if p.Encap {
		SetOuterDSCP(pkt[udpOff-IPv6Len:], dscp)
	}
}

// Decapsulate removes the outer IPv6 header (and its SRH) of an
// encapsulated MRC packet, as the destination NIC does (digest §3.12),
// and returns the inner datagram, which aliases pkt; a plain or
// inline-uSID packet is returned whole. The inner ECN codepoint is
// combined with the outer one as RFC 6040 §4.2 says (DecapECN), so a CE
// mark a switch set on the outer header reaches the receiver; when that
// rule says drop, Decapsulate returns ErrECNDrop. The inner DSCP and hop
// limit are left alone. It does not allocate. On error pkt is unchanged:
// the errors of Decode, or ErrECNDrop.
func Decapsulate(pkt []byte) ([]byte, error) {
	var p Packet
	if err := p.Decode(pkt); err != nil {
		return pkt, err
	}
	if !p.Encap {
		return pkt, nil
	}
	e, ok := DecapECN(p.Outer.ECN(), p.IP.ECN())
	if !ok {
		return pkt, ErrECNDrop
	}
	inner := pkt[p.udpOffset()-IPv6Len : min(len(pkt), IPv6Len+int(p.Outer.PayloadLen))]
	SetOuterECN(inner, e)
	return inner, nil
}
