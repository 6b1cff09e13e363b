package roce

import (
	"encoding/binary"
	"fmt"

	"github.com/openmrc/mrc/wire"
)

// Opcode is a BTH opcode of the RoCEv2 Reliable Connection packets this
// package sends and accepts: the RDMA WRITE family, the ACKNOWLEDGE that
// carries ACKs and NAKs, and the RoCEv2 congestion notification packet.
// Values from the spec (IBTA Vol. 1 §9.2 Table "OpCode field", RC
// transport 0b000; CNP from Annex A17).
type Opcode uint8

const (
	OpWriteFirst   Opcode = 0x06 // RDMA WRITE first packet: RETH, payload of one MTU
	OpWriteMiddle  Opcode = 0x07 // RDMA WRITE middle packet: payload of one MTU
	OpWriteLast    Opcode = 0x08 // RDMA WRITE last packet
	OpWriteLastImm Opcode = 0x09 // RDMA WRITE last packet with immediate: ImmDt
	OpWriteOnly    Opcode = 0x0A // RDMA WRITE only packet: RETH
	OpWriteOnlyImm Opcode = 0x0B // RDMA WRITE only packet with immediate: RETH, ImmDt
	OpAck          Opcode = 0x11 // ACKNOWLEDGE: AETH (ACK, RNR NAK or NAK)
	OpCNP          Opcode = 0x81 // RoCEv2 congestion notification packet
)

// CNPLen is the length of the reserved block that follows the BTH of a
// CNP (IBTA Annex A17).
const CNPLen = 16

// IsData reports whether o is one of the six RDMA WRITE opcodes.
func (o Opcode) IsData() bool { return o >= OpWriteFirst && o <= OpWriteOnlyImm }

// HasRETH reports whether packets with opcode o carry a RETH: only the
// first packet of a message, or its only one (IBTA Vol. 1 §9.4.3).
func (o Opcode) HasRETH() bool { return o == OpWriteFirst || o == OpWriteOnly || o == OpWriteOnlyImm }

// HasImm reports whether packets with opcode o carry an ImmDt.
func (o Opcode) HasImm() bool { return o == OpWriteLastImm || o == OpWriteOnlyImm }

// starts reports whether o begins a message; ends whether it completes one.
func (o Opcode) starts() bool { return o.HasRETH() }
func (o Opcode) ends() bool {
	return o == OpWriteLast || o == OpWriteLastImm || o == OpWriteOnly || o == OpWriteOnlyImm
}

// Known reports whether this package handles o.
func (o Opcode) Known() bool { return o.IsData() || o == OpAck || o == OpCNP }

// HeaderLen returns the length of the transport headers of a packet with
// opcode o: the BTH and the extension headers the opcode implies. It is
// wire.BTHLen for an unknown opcode.
func (o Opcode) HeaderLen() int {
	n := wire.BTHLen
	if o.HasRETH() {
		n += wire.RETHLen
	}
	if o.HasImm() {
		n += wire.ImmDtLen
	}
	switch o {
	case OpAck:
		n += wire.AETHLen
	case OpCNP:
		n += CNPLen
	}
	return n
}

func (o Opcode) String() string {
	switch o {
	case OpWriteFirst:
		return "RDMA_WRITE_FIRST"
	case OpWriteMiddle:
		return "RDMA_WRITE_MIDDLE"
	case OpWriteLast:
		return "RDMA_WRITE_LAST"
	case OpWriteLastImm:
		return "RDMA_WRITE_LAST_IMM"
	case OpWriteOnly:
		return "RDMA_WRITE_ONLY"
	case OpWriteOnlyImm:
		return "RDMA_WRITE_ONLY_IMM"
	case OpAck:
		return "ACKNOWLEDGE"
	case OpCNP:
		return "CNP"
	}
	return fmt.Sprintf("Opcode(%#02x)", uint8(o))
}

// AETH syndrome layout, from the spec (IBTA Vol. 1 §9.3.5): bit 7 is
// reserved, bits 6-5 give the kind, bits 4-0 its value (the credit count
// of an ACK, the timer code of an RNR NAK, the code of a NAK).
const (
	synKindShift = 5
	synKindMask  = 0x3
	synValueMask = 0x1F

	synKindACK = 0 // ACK
	synKindRNR = 1 // RNR NAK
	synKindNAK = 3 // NAK

	// synACK is an ACK with the credit count "invalid" (0x1F): this
	// transport has no SEND, so it advertises no receive credits.
	synACK = wire.AETHAck
	synRNR = synKindRNR << synKindShift
)

// NAK codes, from the spec (IBTA Vol. 1 §9.3.5.2).
const (
	NakPSNSeqError     = 0 // PSN sequence error: resend from the NAK's PSN
	NakInvalidRequest  = 1 // invalid request: fatal
	NakRemoteAccess    = 2 // remote access error: fatal
	NakRemoteOperation = 3 // remote operational error: fatal
)

// becn is the BECN bit of BTH byte 4 (wire.BTH.Resv8a), which a CNP sets
// (IBTA Annex A17).
const becn = 0x40

// MaxHeaderLen is the largest header stack this package writes: IPv6,
// UDP, BTH, RETH and ImmDt. A transmit buffer needs MaxHeaderLen+MTU+8
// bytes (pad and ICRC); mrc.MaxHeaderLen is larger, so a buffer sized for
// the MRC core also serves this package.
const MaxHeaderLen = wire.IPv6Len + wire.UDPLen + wire.BTHLen + wire.RETHLen + wire.ImmDtLen

// Packet is one RoCEv2 RC datagram of this package, from the IPv6 header
// to the ICRC: what Decode fills in and AppendPacket writes. Only the
// plain encapsulation IPv6 | UDP(4791) | BTH | ... is supported: no
// extension headers, no SRv6. Which extension-header fields are
// meaningful depends on the opcode; Decode zeroes the others.
//
// (wire.Packet cannot carry these packets: its Decode accepts only MRC
// opcodes. This type reuses wire's header types and checksum helpers.)
type Packet struct {
	IP   wire.IPv6
	UDP  wire.UDP
	BTH  wire.BTH
	RETH wire.RETH  // OpWriteFirst, OpWriteOnly, OpWriteOnlyImm
	Imm  wire.ImmDt // OpWriteLastImm, OpWriteOnlyImm
	AETH wire.AETH  // OpAck

	// Payload holds the payload bytes present in the decoded buffer,
	// aliasing it. PayloadLen is the length the headers declare; it
	// exceeds len(Payload) when the payload is phantom (or truncated:
	// the consumer knows which).
	Payload    []byte
	PayloadLen int
	// ICRC is the invariant CRC read from the packet, valid if HasICRC:
	// the buffer held the whole datagram.
	ICRC    uint32
	HasICRC bool
}

// Opcode returns the packet's opcode.
func (p *Packet) Opcode() Opcode { return Opcode(p.BTH.Opcode) }

// Len returns the length of the datagram as its headers declare it: the
// on-the-wire size even when the payload is phantom.
func (p *Packet) Len() int {
	n := p.PayloadLen
	return wire.IPv6Len + wire.UDPLen + p.Opcode().HeaderLen() + n + pad(n) + wire.ICRCLen
}

// pad returns the pad count for a payload of n bytes: payload and pad
// together are a multiple of 4 bytes (IBTA Vol. 1 §9.2).
func pad(n int) int { return -n & 3 }

var zeros [CNPLen]byte

// AppendPacket appends the encoding of p with payload to b and returns the
// extended slice. It does not allocate when b has room.
//
// It computes what the other fields imply, ignoring those fields in p:
// the IPv6 payload length and next header, the UDP length and checksum,
// the BTH pad count, and the ICRC. The declared payload length is
// max(p.PayloadLen, len(payload)). When that exceeds len(payload) the
// payload is phantom: every header is written with the true lengths but
// no payload, pad or ICRC follows and the UDP checksum is 0, as
// wire.AppendPacket does for MRC packets.
func AppendPacket(b []byte, p *Packet, payload []byte) []byte {
	op := p.Opcode()
	n := max(p.PayloadLen, len(payload))
	udpLen := wire.UDPLen + op.HeaderLen() + n + pad(n) + wire.ICRCLen
	ip := p.IP
	ip.NextHeader, ip.PayloadLen = wire.ProtoUDP, uint16(udpLen)
	b = ip.Append(b)
	udpOff := len(b)
	u := p.UDP
	u.Length, u.Checksum = uint16(udpLen), 0
	b = u.Append(b)
	bth := p.BTH
	bth.PadCnt = uint8(pad(n))
	b = bth.Append(b)
	if op.HasRETH() {
		b = p.RETH.Append(b)
	}
	if op.HasImm() {
		b = p.Imm.Append(b)
	}
	switch op {
	case OpAck:
		b = p.AETH.Append(b)
	case OpCNP:
		b = append(b, zeros[:]...)
	}
	if n > len(payload) {
		return b // phantom
	}
	b = append(b, payload...)
	b = append(b, zeros[:pad(n)]...)
	b = binary.LittleEndian.AppendUint32(b, wire.ICRC(ip.Src, ip.Dst, b[udpOff:]))
	c := wire.UDPChecksum(ip.Src, ip.Dst, b[udpOff:])
	binary.BigEndian.PutUint16(b[udpOff+6:], c)
	return b
}

// Decode decodes the datagram at the start of b into p, replacing all of
// p. It does not allocate, and p.Payload aliases b.
//
// The IPv6 payload length bounds the datagram; bytes after it are
// ignored. Every header must be present in b (wire.ErrTruncated
// otherwise), but the payload, pad and ICRC need not be: Decode then
// reports the bytes present in Payload, the declared length in
// PayloadLen, and HasICRC false. It returns wire.ErrUnsupported for a
// packet that is not plain IPv6 | UDP to port 4791 with an opcode this
// package knows, and wire.ErrInvalid for lengths that disagree. It checks
// neither the UDP checksum nor the ICRC; Verify does.
func (p *Packet) Decode(b []byte) error {
	*p = Packet{}
	if _, err := p.IP.Decode(b); err != nil {
		return err
	}
	if p.IP.NextHeader != wire.ProtoUDP {
		return wire.ErrUnsupported
	}
	end := wire.IPv6Len + int(p.IP.PayloadLen)
	off := wire.IPv6Len
	if _, err := p.UDP.Decode(b[off:]); err != nil {
		return err
	}
	if p.UDP.DstPort != wire.UDPPortRoCEv2 {
		return wire.ErrUnsupported
	}
	if p.UDP.Length != p.IP.PayloadLen {
		return wire.ErrInvalid
	}
	off += wire.UDPLen
	if _, err := p.BTH.Decode(b[off:]); err != nil {
		return err
	}
	op := p.Opcode()
	if !op.Known() {
		return wire.ErrUnsupported
	}
	hdrEnd := off + op.HeaderLen()
	if hdrEnd > len(b) {
		return wire.ErrTruncated
	}
	rem := end - hdrEnd - int(p.BTH.PadCnt) - wire.ICRCLen
	if rem < 0 || !op.IsData() && (rem != 0 || p.BTH.PadCnt != 0) {
		return wire.ErrInvalid
	}
	x := b[off+wire.BTHLen : hdrEnd]
	if op.HasRETH() {
		n, _ := p.RETH.Decode(x)
		x = x[n:]
	}
	if op.HasImm() {
		_, _ = p.Imm.Decode(x)
	}
	if op == OpAck {
		_, _ = p.AETH.Decode(x)
	}
	p.PayloadLen = rem
	have := min(len(b), end)
	pe := min(have, hdrEnd+rem)
	p.Payload = b[hdrEnd:pe:pe]
	if have == end {
		p.HasICRC = true
		p.ICRC = binary.LittleEndian.Uint32(b[end-wire.ICRCLen:])
	}
	return nil
}

// Verify checks the UDP checksum and the ICRC of b, the buffer p was
// decoded from. It returns wire.ErrChecksum or wire.ErrICRC on a mismatch
// (a zero UDP checksum is a mismatch: RFC 8200 §8.1), and
// wire.ErrTruncated if b does not hold the whole datagram: a phantom
// payload has nothing to verify. It does not allocate.
func (p *Packet) Verify(b []byte) error {
	end := wire.IPv6Len + int(p.UDP.Length)
	if !p.HasICRC || end > len(b) {
		return wire.ErrTruncated
	}
	udp := b[wire.IPv6Len:end]
	if wire.UDPChecksum(p.IP.Src, p.IP.Dst, udp) != binary.BigEndian.Uint16(udp[6:]) {
		return wire.ErrChecksum
	}
	if wire.ICRC(p.IP.Src, p.IP.Dst, udp[:len(udp)-wire.ICRCLen]) != p.ICRC {
		return wire.ErrICRC
	}
	return nil
}
