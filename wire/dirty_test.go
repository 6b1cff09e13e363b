package wire

import (
	"bytes"
	"testing"
)

// TestAppendIntoDirty encodes every kind of packet into a buffer whose
// spare capacity holds garbage and into a zeroed one: the bytes must match,
// so no encoder may leave a byte unwritten.
func TestAppendIntoDirty(t *testing.T) {
	for _, p := range allPacketKinds() {
		payload := bytes.Repeat([]byte{0x5A}, p.PayloadLen)
		clean := AppendPacket(make([]byte, 0, 9000), &p, payload)
		dirty := make([]byte, 9000)
		for i := range dirty {
			dirty[i] = byte(i*7 + 3)
		}
		got := AppendPacket(dirty[:0], &p, payload)
		if !bytes.Equal(clean, got) {
			t.Fatalf("%v (encap %v, srh %v): encoding depends on the buffer's old contents", p.BTH.Opcode, p.Encap, p.HasSRH)
		}
	}
}

// allPacketKinds returns a packet of every opcode in every encapsulation.
func allPacketKinds() []Packet {
	var out []Packet
	ops := []Opcode{OpWriteFirst, OpWriteMiddle, OpWriteLast, OpWriteLastImm, OpWriteOnly, OpWriteOnlyImm,
		OpAck, OpEndpointRequest, OpEndpointResponse, OpSACK, OpNACK, OpProbe}
	for _, op := range ops {
		for encap := range 3 {
			p := Packet{
				IP:  IPv6{TrafficClass: 0x29, FlowLabel: 0x1234, HopLimit: 64, Src: [16]byte{0xfd, 1}, Dst: [16]byte{0xfd, 2}},
				UDP: UDP{SrcPort: 0xC001, DstPort: UDPPortRoCEv2},
				BTH: BTH{Opcode: op, DestQP: 0x123, PSN: 77, TS: encap == 1, AckReq: true},
			}
			switch encap {
			case 1:
				p.HasSRH = true
				p.SRH = SRH{N: 2, SegmentsLeft: 1}
				p.SRH.Segments[0] = [16]byte{0xfc, 0xbb, 1}
				p.SRH.Segments[1] = [16]byte{0xfc, 0xbb, 2}
			case 2:
				p.Encap = true
				p.Outer = IPv6{TrafficClass: 0x28, FlowLabel: 0x1234, HopLimit: 64, Src: [16]byte{0xfd, 1}, Dst: [16]byte{0xfc, 0xbb, 3}}
			}
			if op.IsData() {
				p.PayloadLen = 1001
				p.RETH = RETH{VA: 1 << 33, RKey: 9, DMALen: 5000}
				p.Imm = 0xdeadbeef
			}
			p.SACK = SACK{CackPSN: 70, SackOffset: 1, SackBitmap: 0xf0f0, CC: CCState{RcvdBytes: 5}}
			p.NACK = NACK{Reason: NackTrimmed, NackPSN: 3}
			p.Probe = Probe{ProbeID: 4}
			p.EPReq = EPRequest{Op: EPPortStatusUpdate, PortStatusMask: 0xb}
			p.EPResp = EPResponse{TxTimestamp: 5}
			p.AETH = AETH{Syndrome: AETHAck, MSN: 6}
			out = append(out, p)
		}
	}
	return out
}
