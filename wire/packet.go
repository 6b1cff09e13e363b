package wire

import "encoding/binary"

// Packet is one MRC datagram, from the first IPv6 header to the ICRC:
// what Decode fills in and AppendPacket encodes. Three encapsulations are
// supported (digest §3.2, §3.12):
//
//	plain         IP(NH 17) | UDP | MRC
//	inline uSID   IP(Dst = uSID container; NH 17, or 43 → SRH(NH 17)) | UDP | MRC
//	encapsulated  Outer(Dst = uSID container; NH 41, or 43 → SRH(NH 41)) | IP(NH 17) | UDP | MRC
//
// where MRC is the BTH, the extension headers its opcode implies, the
// payload, the pad and the ICRC. Which extension-header fields are
// meaningful depends on BTH.Opcode; Decode zeroes the others.
//
// A Packet is a plain value; its only reference is Payload. It is not safe
// for concurrent use.
type Packet struct {
	Encap bool // IPv6-in-IPv6: Outer is the outer header, IP the inner one
	Outer IPv6 // the outer header when Encap

	HasSRH bool // an SRH follows the outermost header (Outer, or IP when !Encap)
	SRH    SRH

	IP IPv6 // the header that carries UDP

	// FinalDst, when not zero, is the destination the UDP checksum and
	// the ICRC are computed with (RFC 8200 §8.1). Zero means the default
	// of Final: the last SRH segment when an SRH precedes UDP, else
	// IP.Dst. Set it when the final destination is a uSID container's last
	// CSID (USIDFormat.Final, ResolveUSID). Decode leaves it zero.
	FinalDst [16]byte

	UDP UDP
	BTH BTH

	METH   METH       // data packets
	TSETH  TSETH      // data packets with BTH.TS
	RETH   RETH       // data packets
	Imm    ImmDt      // WRITE_LAST_IMM, WRITE_ONLY_IMM
	AETH   AETH       // ACKNOWLEDGE
	SACK   SACK       // RELIABILITY_SACK
	NACK   NACK       // RELIABILITY_NACK
	Probe  Probe      // RELIABILITY_PROBE_REQ
	EPReq  EPRequest  // ENDPOINT_REQUEST
	EPResp EPResponse // ENDPOINT_RESPONSE

	// Payload holds the payload bytes present in the decoded buffer. It
	// aliases that buffer (capacity capped at its length): it is valid as
	// long as the buffer is, and changes with it. AppendPacket ignores it
	// and takes the payload as an argument.
	Payload []byte
	// PayloadLen is the payload length the length fields declare: the
	// bytes between the last MRC header and the pad. len(Payload) is less
	// when the buffer does not carry the whole payload (phantom payloads,
	// or truncation: the consumer knows which).
	PayloadLen int
	// Trimmed says the datagram ends right after its MRC headers, with no
	// payload, pad or ICRC: what a switch's Trim leaves. PayloadLen is 0.
	Trimmed bool
	// ICRC is the invariant CRC read from the packet, valid if HasICRC.
	ICRC uint32
	// HasICRC says the buffer held the whole datagram, ICRC included.
	HasICRC bool
	// NoCRC makes AppendPacket write zero for the ICRC and the UDP
	// checksum instead of computing them: for simulations, which do not
	// model the NIC's CRC engines. Decode leaves it false.
	NoCRC bool
}

// Final returns the destination for the checksum and the ICRC: FinalDst
// if set; otherwise, as RFC 8200 §8.1 says, the last segment of the SRH
// (Segments[0]) when one precedes UDP (not encapsulated), else IP.Dst.
func (p *Packet) Final() [16]byte {
	switch {
	case p.FinalDst != [16]byte{}:
		return p.FinalDst
	case p.HasSRH && !p.Encap && p.SRH.N > 0:
		return p.SRH.Segments[0]
	}
	return p.IP.Dst
}

// ResolveUSID sets FinalDst for an inline-uSID packet whose destination,
// or last SRH segment, is a container in format f: FinalDst becomes
// f.Final of it, the address the destination NIC sees. Decode cannot do
// this itself, since a container looks like any other address. A node on
// the path calls it before Verify. It does nothing for an encapsulated
// packet, whose inner header carries the NIC's own address.
func (p *Packet) ResolveUSID(f USIDFormat) {
	if p.Encap {
		return
	}
	p.FinalDst = [16]byte{}
	p.FinalDst = f.Final(p.Final())
}

// EV returns the entropy value the packet carries in its UDP source port
// and the flow label of IP.
func (p *Packet) EV() EV { return JoinEV(p.UDP.SrcPort, p.IP.FlowLabel) }

// OuterDSCP returns the DSCP of the outermost header: the one a switch
// reads and rewrites (Trim writes the inner one too; a switch that trims
// to a fixed size does not).
func (p *Packet) OuterDSCP() uint8 {
	if p.Encap {
		return p.Outer.DSCP()
	}
	return p.IP.DSCP()
}

// SetEV stores ev in the UDP source port and the flow label of IP, and of
// Outer when the packet is encapsulated, so the fabric hashes and the
// receiver reads the same bits.
func (p *Packet) SetEV(ev EV) {
	sport, fl := SplitEV(ev)
	p.UDP.SrcPort = sport
	p.IP.FlowLabel = fl
	if p.Encap {
		p.Outer.FlowLabel = fl
	}
}

// Len returns the length of the datagram AppendPacket writes for p with
// PayloadLen bytes of payload, as its length fields declare it: the
// on-the-wire size even when the payload is phantom.
func (p *Packet) Len() int {
	_, total := p.lengths(p.PayloadLen)
	return total
}

// payloadAt returns where p's payload starts in its UDP datagram: after
// the UDP header, the BTH and the extension headers its opcode carries.
func (p *Packet) payloadAt() int { return UDPLen + p.BTH.Opcode.HeaderLen(p.BTH.TS) }

// lengths returns the UDP length and the datagram length for a payload of
// n bytes.
func (p *Packet) lengths(n int) (udpLen, total int) {
	udpLen = p.payloadAt()
	if !p.Trimmed {
		udpLen += n + pad(n) + ICRCLen
	}
	total = IPv6Len + udpLen
	if p.HasSRH {
		total += p.SRH.Len()
	}
	if p.Encap {
		total += IPv6Len
	}
	return udpLen, total
}

// pad returns the pad count for a payload of n bytes: payload and pad
// together are a multiple of 4 bytes (IBTA Vol. 1 §9.2).
func pad(n int) int { return -n & 3 }

var zeroPad [3]byte

// AppendPacket appends the encoding of p with the given payload to b and
// returns the extended slice. It does not allocate when b has room.
//
// It computes and writes what the other fields imply, ignoring those
// fields in p: the IPv6 payload lengths and next headers, the SRH's next
// header, HdrExtLen and LastEntry, the UDP length and checksum, the BTH
// pad count (except when p.Trimmed), and the ICRC. The UDP checksum and
// ICRC use p.Final() as the destination.
//
// The declared payload length is max(p.PayloadLen, len(payload)).
// Phantom payloads: when p.PayloadLen > len(payload), every header is
// written with the true lengths, but no payload, pad or ICRC is appended
// and the UDP checksum is 0. When p.Trimmed, the datagram ends after the
// MRC headers (payload is ignored) and carries a valid UDP checksum.
//
// Lengths must fit the 16-bit IPv6 and UDP length fields (no jumbograms).
// For an opcode that is not Known, only the BTH is written before the
// payload.
func AppendPacket(b []byte, p *Packet, payload []byte) []byte {
	n := max(p.PayloadLen, len(payload))
	hlen := p.BTH.Opcode.HeaderLen(p.BTH.TS) // BTH and extension headers
	udpLen := UDPLen + hlen
	if !p.Trimmed {
		udpLen += n + pad(n) + ICRCLen
	}
	srhLen := 0
	if p.HasSRH {
		srhLen = p.SRH.Len()
	}

	// The outermost header, then the SRH, then everything up to the
	// payload in one piece.
	first, firstLen, inner := &p.IP, srhLen+udpLen, uint8(ProtoUDP)
	if p.Encap {
		first, firstLen, inner = &p.Outer, srhLen+IPv6Len+udpLen, ProtoIPv6
	}
	nh := inner
	if p.HasSRH {
		nh = ProtoRouting
	}
	b, w := grow(b, IPv6Len)
	putIPv6(w, first, firstLen, nh)
	if p.HasSRH {
		at := len(b)
		b = p.SRH.Append(b)
		b[at+srhOffNextHdr] = inner
	}
	rest := UDPLen + hlen
	if p.Encap {
		rest += IPv6Len
	}
	b, w = grow(b, rest)
	if p.Encap {
		putIPv6(w, &p.IP, udpLen, ProtoUDP)
		w = w[IPv6Len:]
	}
	udpOff := len(b) - UDPLen - hlen
	u := w[:UDPLen]
	binary.BigEndian.PutUint16(u[udpOffSrcPort:], p.UDP.SrcPort)
	binary.BigEndian.PutUint16(u[udpOffDstPort:], p.UDP.DstPort)
	binary.BigEndian.PutUint16(u[udpOffLength:], uint16(udpLen))
	binary.BigEndian.PutUint16(u[udpOffChecksum:], 0)
	bth := w[UDPLen : UDPLen+BTHLen]
	p.BTH.put(bth)
	if !p.Trimmed {
		bth[bthOffFlags] = bth[bthOffFlags]&^(bthPadMask<<bthPadShift) | uint8(pad(n))<<bthPadShift
	}
	p.putExt(w[UDPLen+BTHLen : UDPLen+hlen])

	if !p.Trimmed {
		if n > len(payload) {
			return b // phantom payload
		}
		return appendWhole(b, udpOff, udpLen, p.IP.Src, p.Final(), payload, p.NoCRC)
	}
	if !p.NoCRC {
		c := UDPChecksum(p.IP.Src, p.Final(), b[udpOff:])
		binary.BigEndian.PutUint16(b[udpOff+udpOffChecksum:], c)
	}
	return b
}

// appendWhole ends a packet whose headers b holds, its UDP header at
// udpOff with length udpLen and checksum zero: it appends payload, the pad
// and the ICRC and writes the UDP checksum, over src and the final
// destination final; with noCRC, both are zero (Packet.NoCRC).
func appendWhole(b []byte, udpOff, udpLen int, src, final [16]byte, payload []byte, noCRC bool) []byte {
	if !noCRC && len(payload) >= foldBlock {
		return appendPayloadChecked(b, udpOff, udpLen, src, final, payload)
	}
	b = append(b, payload...)
	b = append(b, zeroPad[:pad(len(payload))]...)
	if noCRC {
		return binary.LittleEndian.AppendUint32(b, 0)
	}
	b = binary.LittleEndian.AppendUint32(b, ICRC(src, final, b[udpOff:]))
	c := UDPChecksum(src, final, b[udpOff:])
	binary.BigEndian.PutUint16(b[udpOff+udpOffChecksum:], c)
	return b
}

// appendPayloadChecked is AppendPacket's end for a payload of a block or
// more: b holds the packet up to the payload, its UDP header at udpOff
// with length udpLen (checksum zero). It copies the payload in while it
// sums and CRCs it (sumCRC), then appends the padding and the ICRC and
// writes the UDP checksum: the bytes AppendPacket's other path writes,
// with one pass over the payload instead of three.
func appendPayloadChecked(b []byte, udpOff, udpLen int, src, final [16]byte, payload []byte) []byte {
	hdrEnd := len(b)
	n := len(payload)
	b, w := grow(b, n+pad(n)+ICRCLen)
	udp := b[udpOff:]
	s, crc := headChecks(src, final, udp, hdrEnd-udpOff, udpLen)
	s, crc = sumCRC(w[:n], s, crc, payload)
	clear(w[n : n+pad(n)])
	crc = crcRest(crc, w[n:n+pad(n)])
	binary.LittleEndian.PutUint32(w[n+pad(n):], crc)
	s = sum(s, w[n+pad(n):])
	binary.BigEndian.PutUint16(udp[udpOffChecksum:], finish(s))
	return b
}

// putIPv6 writes h into w with the given payload length and next header.
func putIPv6(w []byte, h *IPv6, payloadLen int, nextHeader uint8) {
	h.put(w)
	binary.BigEndian.PutUint16(w[ipv6OffPayloadLen:], uint16(payloadLen))
	w[ipv6OffNextHeader] = nextHeader
}

// putExt writes the extension headers p's opcode carries into w, which
// holds exactly their length.
func (p *Packet) putExt(w []byte) {
	x := p.BTH.Opcode.exts(p.BTH.TS)
	switch {
	case x.METH >= 0: // data
		p.METH.put(w[x.METH:])
		if x.TSETH >= 0 {
			p.TSETH.put(w[x.TSETH:])
		}
		p.RETH.put(w[x.RETH:])
		if x.ImmDt >= 0 {
			p.Imm.put(w[x.ImmDt:])
		}
	case x.AETH >= 0:
		p.AETH.put(w[x.AETH:])
	case x.SACK >= 0:
		p.SACK.put(w[x.SACK:])
	case x.NACK >= 0:
		p.NACK.put(w[x.NACK:])
	case x.Probe >= 0:
		p.Probe.put(w[x.Probe:])
	case x.EPReq >= 0:
		p.EPReq.put(w[x.EPReq:])
	case x.EPResp >= 0:
		p.EPResp.put(w[x.EPResp:])
	}
}

// Decode decodes the datagram at the start of b into p, replacing all of
// p. It does not allocate, and p.Payload aliases b.
//
// The outermost IPv6 payload length bounds the datagram; bytes after it
// (link-layer padding) are ignored. The lengths of the nested headers must
// agree with it (ErrInvalid otherwise). Every header must be present in b
// (ErrTruncated otherwise), but the payload, pad and ICRC need not be:
// Decode then reports the payload bytes present in Payload, the declared
// length in PayloadLen, and HasICRC false. Whether a short datagram is a
// phantom or a truncation is for the caller to decide. Decode checks
// neither the UDP checksum nor the ICRC; Verify does. On error, p holds
// the headers decoded so far.
func (p *Packet) Decode(b []byte) error {
	*p = Packet{}
	if len(b) >= IPv6Len && b[ipv6OffVerTC]>>4 == ipv6Version && b[ipv6OffNextHeader] == ProtoUDP {
		// The common case, IPv6 | UDP, in a straight line.
		h := (*[IPv6Len]byte)(b)
		vtf := binary.BigEndian.Uint32(h[:])
		ip := &p.IP
		ip.TrafficClass, ip.FlowLabel = uint8(vtf>>20), vtf&FlowLabelMask
		ip.PayloadLen, ip.NextHeader, ip.HopLimit = binary.BigEndian.Uint16(h[ipv6OffPayloadLen:]), ProtoUDP, h[ipv6OffHopLimit]
		ip.Src, ip.Dst = *(*[16]byte)(h[ipv6OffSrc:]), *(*[16]byte)(h[ipv6OffDst:])
		return p.decodeUDP(b, IPv6Len, IPv6Len+int(ip.PayloadLen))
	}
	return p.decodeHeaders(b)
}

// decodeHeaders is Decode for any datagram (the IPv6 headers in general:
// an SRH, an inner header), on a zero p.
func (p *Packet) decodeHeaders(b []byte) error {
	off, err := p.IP.Decode(b)
	if err != nil {
		return err
	}
	end := off + int(p.IP.PayloadLen)
	nh := p.IP.NextHeader
	if nh == ProtoRouting {
		n, err := p.SRH.Decode(b[off:])
		if err != nil {
			return err
		}
		p.HasSRH = true
		off += n
		nh = p.SRH.NextHeader
	}
	if nh == ProtoIPv6 {
		p.Encap = true
		p.Outer = p.IP
		n, err := p.IP.Decode(b[off:])
		if err != nil {
			return err
		}
		off += n
		if off+int(p.IP.PayloadLen) != end {
			return ErrInvalid
		}
		nh = p.IP.NextHeader
	}
	if nh != ProtoUDP {
		return ErrUnsupported
	}
	return p.decodeUDP(b, off, end)
}

// decodeUDP is the rest of Decode from the UDP header on, which starts
// at b[udpOff:]; the datagram ends at b[end] by the outermost header's
// length.
func (p *Packet) decodeUDP(b []byte, udpOff, end int) error {
	if _, err := p.UDP.Decode(b[udpOff:]); err != nil {
		return err
	}
	if p.UDP.Length < UDPLen || udpOff+int(p.UDP.Length) != end {
		return ErrInvalid
	}
	off := udpOff + UDPLen
	if _, err := p.BTH.Decode(b[off:]); err != nil {
		return err
	}
	op := p.BTH.Opcode
	x := op.exts(p.BTH.TS)
	if x.Len == 0 { // not Known
		return ErrUnsupported
	}
	hdrEnd := off + BTHLen + int(x.Len)
	if hdrEnd > len(b) {
		return ErrTruncated
	}
	if hdrEnd > end {
		return ErrInvalid
	}
	p.decodeExt(b[off+BTHLen:hdrEnd], x)

	rem := end - hdrEnd
	if rem == 0 {
		p.Trimmed = true
		return nil
	}
	// The pad count makes payload and pad a multiple of 4 bytes (IBTA):
	// any other count is malformed, and re-encoding would change the
	// packet's length.
	if rem < int(p.BTH.PadCnt)+ICRCLen || pad(rem-int(p.BTH.PadCnt)-ICRCLen) != int(p.BTH.PadCnt) {
		return ErrInvalid
	}
	p.PayloadLen = rem - int(p.BTH.PadCnt) - ICRCLen
	have := min(len(b), end)
	pe := min(have, hdrEnd+p.PayloadLen)
	p.Payload = b[hdrEnd:pe:pe]
	if have == end {
		p.HasICRC = true
		p.ICRC = binary.LittleEndian.Uint32(b[end-ICRCLen:])
	}
	return nil
}

// decodeExt decodes the extension headers x lays out from b, which holds
// exactly their length, so no decode can fail.
func (p *Packet) decodeExt(b []byte, x *Exts) {
	switch {
	case x.METH >= 0: // data: METH, [TSETH], RETH, [ImmDt], in a straight line
		m := (*[METHLen]byte)(b)
		p.METH.RQMSN, p.METH.MSN = binary.BigEndian.Uint16(m[methOffRQMSN:]), binary.BigEndian.Uint16(m[methOffMSN:])
		if x.TSETH >= 0 {
			_, _ = p.TSETH.Decode(b[x.TSETH:])
		}
		r := (*[RETHLen]byte)(b[x.RETH:])
		p.RETH.VA, p.RETH.RKey = binary.BigEndian.Uint64(r[rethOffVA:]), binary.BigEndian.Uint32(r[rethOffRKey:])
		p.RETH.DMALen = binary.BigEndian.Uint32(r[rethOffDMALen:])
		if x.ImmDt >= 0 {
			_, _ = p.Imm.Decode(b[x.ImmDt:])
		}
	case x.AETH >= 0:
		_, _ = p.AETH.Decode(b[x.AETH:])
	case x.SACK >= 0:
		_, _ = p.SACK.Decode(b[x.SACK:])
	case x.NACK >= 0:
		_, _ = p.NACK.Decode(b[x.NACK:])
	case x.Probe >= 0:
		_, _ = p.Probe.Decode(b[x.Probe:])
	case x.EPReq >= 0:
		_, _ = p.EPReq.Decode(b[x.EPReq:])
	case x.EPResp >= 0:
		_, _ = p.EPResp.Decode(b[x.EPResp:])
	}
}

// udpOffset returns the offset of the UDP header in the buffer p was
// decoded from.
func (p *Packet) udpOffset() int {
	off := IPv6Len
	if p.HasSRH {
		off += p.SRH.wireLen()
	}
	if p.Encap {
		off += IPv6Len
	}
	return off
}

// Verify checks the UDP checksum and, unless the packet is Trimmed, the
// ICRC of b, the buffer p was decoded from, using p.Final() as the
// destination. It returns ErrChecksum or ErrICRC on a mismatch (a zero
// UDP checksum is a mismatch: RFC 8200 §8.1), and ErrTruncated if b does
// not hold the whole datagram: a phantom payload has nothing to verify.
// It does not allocate.
func (p *Packet) Verify(b []byte) error {
	udpOff := p.udpOffset()
	end := udpOff + int(p.UDP.Length)
	if end > len(b) || int(p.UDP.Length) < UDPLen {
		return ErrTruncated
	}
	udp := b[udpOff:end]
	final := p.Final()
	at := p.payloadAt()
	if !p.Trimmed && len(udp) >= fuseMin && len(udp)%2 == 0 && at%2 == 0 && at+ICRCLen <= len(udp) {
		c, icrc := udpChecks(p.IP.Src, final, udp, at)
		switch {
		case c != binary.BigEndian.Uint16(udp[udpOffChecksum:]):
			return ErrChecksum
		case icrc != binary.LittleEndian.Uint32(udp[len(udp)-ICRCLen:]):
			return ErrICRC
		}
		return nil
	}
	if UDPChecksum(p.IP.Src, final, udp) != binary.BigEndian.Uint16(udp[udpOffChecksum:]) {
		return ErrChecksum
	}
	if p.Trimmed {
		return nil
	}
	if len(udp) < UDPLen+ICRCLen {
		return ErrICRC
	}
	n := len(udp) - ICRCLen
	if ICRC(p.IP.Src, final, udp[:n]) != binary.LittleEndian.Uint32(udp[n:]) {
		return ErrICRC
	}
	return nil
}

// VerifyInto is Verify for a data packet that also copies its payload,
// PayloadLen bytes, into dst, in the same pass over the bytes where it
// can. It returns what Verify returns. On success dst holds the payload;
// on an error dst's first PayloadLen bytes are undefined: they may hold
// some, all or none of the payload's bytes, so the caller must pass a
// dst where any bytes are acceptable. dst must hold PayloadLen bytes. It
// does not allocate. The core does not use it: a packet that fails
// verification must leave a QP's memory untouched (docs/security.md), so
// dst there could only be a staging buffer, and a second copy costs what
// the shared pass saves.
func (p *Packet) VerifyInto(b, dst []byte) error {
	n := p.PayloadLen
	dst = dst[:n]
	udpOff := p.udpOffset()
	end := udpOff + int(p.UDP.Length)
	at := p.payloadAt()
	if p.Trimmed || n < foldBlock || len(p.Payload) != n || end > len(b) || at+n+ICRCLen > int(p.UDP.Length) {
		err := p.Verify(b)
		if err == nil {
			copy(dst, p.Payload)
		}
		return err
	}
	udp := b[udpOff:end]
	c, icrc := udpChecksCopy(dst, p.IP.Src, p.Final(), udp, at, n)
	switch {
	case c != binary.BigEndian.Uint16(udp[udpOffChecksum:]):
		return ErrChecksum
	case icrc != binary.LittleEndian.Uint32(udp[len(udp)-ICRCLen:]):
		return ErrICRC
	}
	return nil
}
