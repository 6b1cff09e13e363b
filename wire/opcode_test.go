package wire

import "testing"

func TestOpcode(t *testing.T) {
	for _, tc := range []struct {
		op         Opcode
		name       string
		data, imm  bool
		hdr, hdrTS int
	}{
		{OpWriteFirst, "WRITE_FIRST", true, false, 32, 36},
		{OpWriteMiddle, "WRITE_MIDDLE", true, false, 32, 36},
		{OpWriteLast, "WRITE_LAST", true, false, 32, 36},
		{OpWriteLastImm, "WRITE_LAST_IMM", true, true, 36, 40},
		{OpWriteOnly, "WRITE_ONLY", true, false, 32, 36},
		{OpWriteOnlyImm, "WRITE_ONLY_IMM", true, true, 36, 40},
		{OpAck, "ACKNOWLEDGE", false, false, 16, 16},
		{OpEndpointRequest, "ENDPOINT_REQUEST", false, false, 28, 28},
		{OpEndpointResponse, "ENDPOINT_RESPONSE", false, false, 48, 48},
		{OpSACK, "RELIABILITY_SACK", false, false, 48, 48},
		{OpNACK, "RELIABILITY_NACK", false, false, 32, 32},
		{OpProbe, "RELIABILITY_PROBE_REQ", false, false, 28, 28},
	} {
		if tc.op.String() != tc.name || tc.op.IsData() != tc.data || tc.op.HasImm() != tc.imm || !tc.op.Known() {
			t.Errorf("%#x: String %q IsData %v HasImm %v Known %v", uint8(tc.op),
				tc.op.String(), tc.op.IsData(), tc.op.HasImm(), tc.op.Known())
		}
		if got := tc.op.HeaderLen(false); got != tc.hdr {
			t.Errorf("%v.HeaderLen(false) = %d; want %d", tc.op, got, tc.hdr)
		}
		if got := tc.op.HeaderLen(true); got != tc.hdrTS {
			t.Errorf("%v.HeaderLen(true) = %d; want %d", tc.op, got, tc.hdrTS)
		}
	}
	for _, op := range []Opcode{0x0A, 0xC5, 0xCC, 0xD0, 0xDF, 0xFF} {
		if op.Known() || op.IsData() || op.HeaderLen(true) != BTHLen {
			t.Errorf("%#x: Known %v IsData %v HeaderLen %d", uint8(op), op.Known(), op.IsData(), op.HeaderLen(true))
		}
	}
	if got := Opcode(0x0A).String(); got != "Opcode(0x0a)" {
		t.Errorf("String of an unknown opcode = %q", got)
	}
}
