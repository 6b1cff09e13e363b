package wire

import "fmt"

// Opcode is the BTH opcode. MRC opcodes have opcode[7:5] = 0b110, apart
// from the RC ones; data and ACK opcodes are 0xC0 | the RC opcode (digest
// §3.1 [S]).
type Opcode uint8

// MRC opcodes, from the spec (digest §3.1 [S]).
const (
	OpWriteFirst       Opcode = 0xC6 // RDMA WRITE first packet
	OpWriteMiddle      Opcode = 0xC7 // RDMA WRITE middle packet
	OpWriteLast        Opcode = 0xC8 // RDMA WRITE last packet
	OpWriteLastImm     Opcode = 0xC9 // RDMA WRITE last packet with immediate
	OpWriteOnly        Opcode = 0xCA // RDMA WRITE only packet
	OpWriteOnlyImm     Opcode = 0xCB // RDMA WRITE only packet with immediate
	OpAck              Opcode = 0xD1 // RoCE transport ACK (AETH)
	OpEndpointRequest  Opcode = 0xD8 // endpoint request (ERTH), QPN 2
	OpEndpointResponse Opcode = 0xD9 // endpoint response (EETH), QPN 2
	OpSACK             Opcode = 0xDC // reliability SACK (SETH + CC_STATE)
	OpNACK             Opcode = 0xDD // reliability NACK (NETH)
	OpProbe            Opcode = 0xDE // reliability probe request (PETH)
)

// IsData reports whether o is one of the six WRITE opcodes, whose packets
// carry METH, RETH and a payload.
func (o Opcode) IsData() bool { return o >= OpWriteFirst && o <= OpWriteOnlyImm }

// HasImm reports whether packets with opcode o carry an ImmDt header.
func (o Opcode) HasImm() bool { return o == OpWriteLastImm || o == OpWriteOnlyImm }

// Known reports whether o is an MRC opcode this package decodes.
func (o Opcode) Known() bool {
	return o.HeaderLen(false) != BTHLen
}

// HeaderLen returns the length of the MRC headers of a packet with opcode
// o: the BTH plus the extension headers the opcode implies (digest §3.2).
// ts says whether the BTH TS bit is set; it adds a TSETH to data packets
// only. For an opcode that is not Known, HeaderLen returns BTHLen.
func (o Opcode) HeaderLen(ts bool) int {
	switch {
	case o.IsData():
		n := BTHLen + METHLen + RETHLen
		if ts {
			n += TSETHLen
		}
		if o.HasImm() {
			n += ImmDtLen
		}
		return n
	case o == OpAck:
		return BTHLen + AETHLen
	case o == OpSACK:
		return BTHLen + SACKLen
	case o == OpNACK:
		return BTHLen + NETHLen
	case o == OpProbe:
		return BTHLen + PETHLen
	case o == OpEndpointRequest:
		return BTHLen + ERTHLen
	case o == OpEndpointResponse:
		return BTHLen + EETHLen
	}
	return BTHLen
}

// String returns the spec's name for o, or Opcode(0xNN).
func (o Opcode) String() string {
	switch o {
	case OpWriteFirst:
		return "WRITE_FIRST"
	case OpWriteMiddle:
		return "WRITE_MIDDLE"
	case OpWriteLast:
		return "WRITE_LAST"
	case OpWriteLastImm:
		return "WRITE_LAST_IMM"
	case OpWriteOnly:
		return "WRITE_ONLY"
	case OpWriteOnlyImm:
		return "WRITE_ONLY_IMM"
	case OpAck:
		return "ACKNOWLEDGE"
	case OpEndpointRequest:
		return "ENDPOINT_REQUEST"
	case OpEndpointResponse:
		return "ENDPOINT_RESPONSE"
	case OpSACK:
		return "RELIABILITY_SACK"
	case OpNACK:
		return "RELIABILITY_NACK"
	case OpProbe:
		return "RELIABILITY_PROBE_REQ"
	}
	return fmt.Sprintf("Opcode(%#02x)", uint8(o))
}
