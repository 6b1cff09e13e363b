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

// EndsMessage reports whether o is the last packet of a WRITE.
func (o Opcode) EndsMessage() bool {
	return o == OpWriteLast || o == OpWriteLastImm || o == OpWriteOnly || o == OpWriteOnlyImm
}

// Known reports whether o is an MRC opcode this package decodes.
func (o Opcode) Known() bool {
	return o.HeaderLen(false) != BTHLen
}

// HeaderLen returns the length of the MRC headers of a packet with opcode
// o: the BTH plus the extension headers the opcode implies (digest §3.2).
// ts says whether the BTH TS bit is set; it adds a TSETH to data packets
// only. For an opcode that is not Known, HeaderLen returns BTHLen.
func (o Opcode) HeaderLen(ts bool) int { return BTHLen + int(o.exts(ts).Len) }

// Exts is the layout of the extension headers that follow the BTH of one
// opcode: each header's offset from the end of the BTH, or -1 when the
// opcode does not carry it. It is the one table of which headers follow
// which opcode; the encoder, the decoder and the dump all read it.
type Exts struct {
	METH, TSETH, RETH, ImmDt int8 // data packets
	AETH, SACK, NACK, Probe  int8 // a RoCE-style ACK, SETH+CC_STATE, NETH, PETH
	EPReq, EPResp            int8 // ERTH, EETH
	Len                      int8 // bytes of all of them
}

// Exts returns the extension header layout of opcode o; ts says whether
// the BTH TS bit is set, which adds a TSETH to data packets only. An
// opcode that is not Known has none.
func (o Opcode) Exts(ts bool) Exts { return *o.exts(ts) }

// exts is Exts without the copy, for the codec's hot paths.
func (o Opcode) exts(ts bool) *Exts {
	if ts {
		return &extTable[1][o]
	}
	return &extTable[0][o]
}

// extTable is Exts by TS bit and opcode, computed once (layoutExts).
var extTable = func() (t [2][256]Exts) {
	for op := range 256 {
		t[0][op], t[1][op] = layoutExts(Opcode(op), false), layoutExts(Opcode(op), true)
	}
	return t
}()

var noExts = Exts{METH: -1, TSETH: -1, RETH: -1, ImmDt: -1, AETH: -1, SACK: -1, NACK: -1, Probe: -1, EPReq: -1, EPResp: -1}

// layoutExts lays out the extension headers of opcode o (digest §3.2).
func layoutExts(o Opcode, ts bool) Exts {
	x := noExts
	switch {
	case o.IsData():
		x.METH, x.Len = 0, METHLen
		if ts {
			x.TSETH, x.Len = x.Len, x.Len+TSETHLen
		}
		x.RETH, x.Len = x.Len, x.Len+RETHLen
		if o.HasImm() {
			x.ImmDt, x.Len = x.Len, x.Len+ImmDtLen
		}
	case o == OpAck:
		x.AETH, x.Len = 0, AETHLen
	case o == OpSACK:
		x.SACK, x.Len = 0, SACKLen
	case o == OpNACK:
		x.NACK, x.Len = 0, NETHLen
	case o == OpProbe:
		x.Probe, x.Len = 0, PETHLen
	case o == OpEndpointRequest:
		x.EPReq, x.Len = 0, ERTHLen
	case o == OpEndpointResponse:
		x.EPResp, x.Len = 0, EETHLen
	}
	return x
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
