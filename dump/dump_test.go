package dump

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/pcap"
	"github.com/openmrc/mrc/roce"
	"github.com/openmrc/mrc/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/edge.pcapng and the golden outputs")

var (
	hostA = [16]byte{0xfd, 0, 15: 0xa}
	hostB = [16]byte{0xfd, 0, 15: 0xb}
	block = [16]byte{0xfc, 0xbb}
)

// base returns a packet from A to B with the given opcode, EV and PSN.
func base(op wire.Opcode, ev wire.EV, psn uint32) wire.Packet {
	p := wire.Packet{
		IP:  wire.IPv6{TrafficClass: 10<<2 | 2, HopLimit: 64, Src: hostA, Dst: hostB},
		UDP: wire.UDP{DstPort: wire.UDPPortRoCEv2},
		BTH: wire.BTH{Opcode: op, PKey: wire.PKeyDefault, DestQP: 0x123, PSN: psn},
	}
	p.SetEV(ev)
	return p
}

// edgeCase is one packet of the edge-case capture and what decoding it
// must show.
type edgeCase struct {
	name     string
	dgram    []byte // the IP datagram
	wireLen  int    // > len(dgram): phantom
	snaplen  int    // record only this much of the frame
	raw      []byte // a whole frame instead of dgram (non-IP link content)
	check    func(t *testing.T, f *Frame)
	problems []string // substrings, one per expected problem, in order
}

func edgeCases(t testing.TB) []edgeCase {
	// Plain IPv6, WRITE_ONLY_IMM with a TSETH and a 13-byte payload (pad 3).
	imm := base(wire.OpWriteOnlyImm, 0xC0012005, 7)
	imm.BTH.TS, imm.BTH.AckReq = true, true
	imm.METH = wire.METH{RQMSN: 3, MSN: 9}
	imm.TSETH = wire.TSETH{TxTimestamp: 0x1234, TSR: true, FType: wire.TSETHFType}
	imm.RETH = wire.RETH{VA: 0xFEDCBA9876543210, RKey: 0xABCD, DMALen: 13}
	imm.Imm = 0xDEADBEEF
	immPkt := wire.AppendPacket(nil, &imm, []byte("hello, world!"))

	// Inline uSID destination with an SRH whose last segment is B, and a
	// retransmission.
	srh := base(wire.OpWriteMiddle, 0xC0001002, 8)
	srh.IP.Dst = wire.F3216.Container(block, 0x1002, 0x2000, 0xe010)
	srh.HasSRH = true
	srh.SRH = wire.SRH{SegmentsLeft: 1, N: 2, Segments: [wire.MaxSegments][16]byte{hostB, wire.F3216.Container(block, 0x3000)}}
	srh.BTH.Rtx = true
	srh.RETH = wire.RETH{VA: 0x1000, RKey: 1, DMALen: 4096}
	srhPkt := wire.AppendPacket(nil, &srh, bytes.Repeat([]byte{1}, 64))

	// Encapsulated SRv6, trimmed at the last hop.
	enc := base(wire.OpWriteFirst, 0xC0001003, 9)
	enc.Encap = true
	enc.Outer = wire.IPv6{TrafficClass: 10 << 2, HopLimit: 64, Src: hostA, Dst: wire.F3216.Container(block, 0x1003, 0x2000, 0xe010)}
	enc.SetEV(0xC0001003)
	enc.RETH = wire.RETH{VA: 0x2000, RKey: 1, DMALen: 8192}
	whole := wire.AppendPacket(nil, &enc, bytes.Repeat([]byte{2}, 4096))
	trimmed, err := wire.Trim(append([]byte(nil), whole...), 49)
	if err != nil {
		t.Fatal(err)
	}
	// The same, cut to 238 bytes as a fixed-size trim leaves it (lengths
	// stale, outer DSCP rewritten), and cut with its DSCP left: truncated.
	trimCut := append([]byte(nil), whole[:238]...)
	wire.SetOuterDSCP(trimCut, 49)
	truncated := append([]byte(nil), whole[:238]...)

	// A phantom payload: 4096 bytes on the wire, none carried.
	ph := base(wire.OpWriteLast, 0xC0002004, 10)
	ph.RETH = wire.RETH{VA: 0x3000, RKey: 1, DMALen: 8192}
	ph.PayloadLen = 4096
	phPkt := wire.AppendPacket(nil, &ph, nil)

	// A SACK, CE-marked, M=SKIP_ONCE, probe response and rtx flags, with
	// a bitmap.
	sk := base(wire.OpSACK, 0xC0013001, 0)
	sk.IP.TrafficClass = 46<<2 | 3
	sk.SACK = wire.SACK{M: wire.SackSkipOnce, PR: true, Rtx: true, AckPSNOffset: 3, Entropy: 0xC0001002, CackPSN: 4,
		MPR: 8, SackOffset: 1, SackBitmap: 0x8000000000000076,
		CC: wire.CCState{TxTimestamp: 0x1234, OOOCount: 5, RC: true, RcvCwndPen: 64, RcvdBytes: 300}}
	sackPkt := wire.AppendPacket(nil, &sk, nil)

	// NACKs: a known reason and an unknown one.
	nk := base(wire.OpNACK, 0xC0013002, 0)
	nk.NACK = wire.NACK{Reason: wire.NackNoBitmap, CE: true, Entropy: 0xC0001003, NackPSN: 0xFFFFFE, CCType: wire.NACKDefaultCCType, TxTimestamp: 77}
	nackPkt := wire.AppendPacket(nil, &nk, nil)
	nk.NACK.Reason = 0x42
	nack42 := wire.AppendPacket(nil, &nk, nil)

	// A probe, an ACK, an endpoint request and response.
	pr := base(wire.OpProbe, 0xC0001002, 0)
	pr.BTH.AckReq = true
	pr.Probe = wire.Probe{ProbeID: 42, TS: wire.TSETH{TxTimestamp: 9, FType: 1}}
	probePkt := wire.AppendPacket(nil, &pr, nil)
	ack := base(wire.OpAck, 0xC0001002, 11)
	ack.AETH = wire.AETH{Syndrome: wire.AETHAck, MSN: 5}
	ackPkt := wire.AppendPacket(nil, &ack, nil)
	er := base(wire.OpEndpointRequest, 0xC0001002, 0)
	er.BTH.DestQP = wire.QPNEndpoint
	er.EPReq = wire.EPRequest{Op: wire.EPPortStatusUpdate, PortStatusMask: 0b101, TS: wire.TSETH{TxTimestamp: 3, FType: 1}}
	erPkt := wire.AppendPacket(nil, &er, nil)
	ep := base(wire.OpEndpointResponse, 0xC0001002, 0)
	ep.BTH.DestQP = wire.QPNEndpoint
	ep.EPResp = wire.EPResponse{Op: wire.EPEVProbe, PortStatusMask: 0b11, TxTimestamp: 3}
	epPkt := wire.AppendPacket(nil, &ep, nil)

	// Damaged packets.
	cut := sackPkt[:len(sackPkt)-20] // lengths say 20 bytes more
	badICRC := bytes.Clone(immPkt)
	badICRC[len(badICRC)-8] ^= 0xFF // a payload byte: UDP checksum and ICRC both wrong
	unknown := bytes.Clone(ackPkt)
	unknown[wire.IPv6Len+wire.UDPLen] = 0xDF
	send := bytes.Clone(ackPkt)
	send[wire.IPv6Len+wire.UDPLen] = 0x04 // RC SEND_ONLY: not a RoCE packet our baseline sends

	// RoCEv2 RC packets as our RoCE baseline sends them: a WRITE_FIRST
	// with a phantom payload, a WRITE_ONLY_IMM with a real one, an
	// ACKNOWLEDGE carrying a NAK, and a CNP.
	rc := func(op roce.Opcode, psn uint32) roce.Packet {
		return roce.Packet{
			IP:  wire.IPv6{TrafficClass: 26 << 2, HopLimit: 64, Src: hostA, Dst: hostB, FlowLabel: 0x46ed5},
			UDP: wire.UDP{SrcPort: 49769, DstPort: wire.UDPPortRoCEv2},
			BTH: wire.BTH{Opcode: wire.Opcode(op), PKey: wire.PKeyDefault, DestQP: 0x100, PSN: psn},
		}
	}
	wf := rc(roce.OpWriteFirst, 0)
	wf.RETH = wire.RETH{VA: 0x100000000, RKey: 0x62, DMALen: 1 << 20}
	wf.PayloadLen = 4096
	roceFirst := roce.AppendPacket(nil, &wf, nil)
	wi := rc(roce.OpWriteOnlyImm, 7)
	wi.RETH = wire.RETH{VA: 0x2000, RKey: 0x62, DMALen: 5}
	wi.Imm = 0xC0FFEE
	roceImm := roce.AppendPacket(nil, &wi, []byte("hello"))
	nak := rc(roce.OpAck, 27)
	nak.AETH = wire.AETH{Syndrome: 3 << 5, MSN: 4} // NAK PSN_SEQ_ERROR
	roceNAK := roce.AppendPacket(nil, &nak, nil)
	cnp := rc(roce.OpCNP, 0)
	cnp.BTH.Resv8a = 0x40 // BECN
	roceCNP := roce.AppendPacket(nil, &cnp, nil)
	dns := bytes.Clone(ackPkt)
	binary.BigEndian.PutUint16(dns[wire.IPv6Len+2:], 53)
	longUDP := bytes.Clone(ackPkt)
	binary.BigEndian.PutUint16(longUDP[wire.IPv6Len+4:], 200)

	// MRC over IPv4 (a datapath on IPv4 sockets).
	udp := ackPkt[wire.IPv6Len:]
	v4 := []byte{0x45, 46 << 2, 0, byte(20 + len(udp)), 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	v4 = append(v4, udp...)
	binary.BigEndian.PutUint16(v4[20+6:], 0)

	arp := make([]byte, 42)
	copy(arp[12:], []byte{0x08, 0x06})

	return []edgeCase{
		{name: "write_only_imm", dgram: immPkt, check: func(t *testing.T, f *Frame) {
			if f.BTH.OpcodeName != "WRITE_ONLY_IMM" || !f.BTH.TS || !f.BTH.A || f.BTH.PSN != 7 || f.BTH.DestQP != 0x123 || f.BTH.PadCnt != 3 {
				t.Errorf("bth %+v", f.BTH)
			}
			if f.METH.RQMSN != 3 || f.METH.MSN != 9 || f.TSETH.TxTimestamp != 0x1234 || !f.TSETH.TSR || f.TSETH.FType != 1 {
				t.Errorf("meth %+v tseth %+v", f.METH, f.TSETH)
			}
			if f.RETH.VA != "0xfedcba9876543210" || f.RETH.RKey != 0xABCD || f.RETH.DMALen != 13 || f.ImmDt.Value != 0xDEADBEEF {
				t.Errorf("reth %+v imm %+v", f.RETH, f.ImmDt)
			}
			if f.Data.Len != 13 || f.Data.Captured != 13 || f.Data.Pad != 3 || *f.ICRC.OK != true || *f.UDP.Checksum.OK != true {
				t.Errorf("payload %+v icrc %+v udp %+v", f.Data, f.ICRC, f.UDP.Checksum)
			}
			if f.EV.Value != 0xC0012005 || f.EV.Plane != 2 || f.EV.Path != 5 || f.IP[0].DSCP != 10 || f.IP[0].ECN != "ECT(0)" {
				t.Errorf("ev %+v ip %+v", f.EV, f.IP[0])
			}
		}},
		{name: "srh_inline_usid_rtx", dgram: srhPkt, check: func(t *testing.T, f *Frame) {
			if f.SRH == nil || len(f.SRH.Segments) != 2 || f.SRH.Segments[0] != "fd00::b" || f.SRH.SegmentsLeft != 1 || f.SRH.NextHeader != 17 {
				t.Errorf("srh %+v", f.SRH)
			}
			if len(f.IP[0].USIDs) != 3 || f.IP[0].USIDs[0] != 0x1002 || f.IP[0].USIDBlock != "fcbb::" {
				t.Errorf("usids %+v", f.IP[0])
			}
			if !f.BTH.Rtx || *f.ICRC.OK != true || *f.UDP.Checksum.OK != true {
				t.Errorf("rtx %v icrc %+v udp %+v", f.BTH.Rtx, f.ICRC, f.UDP.Checksum)
			}
		}},
		{name: "encapsulated_trimmed", dgram: trimmed, check: func(t *testing.T, f *Frame) {
			if !f.Trimmed || f.Data != nil || f.ICRC != nil || len(f.IP) != 2 || f.IP[0].DSCP != 49 || f.IP[1].DSCP != 49 {
				t.Errorf("trimmed %v data %+v icrc %+v ips %d", f.Trimmed, f.Data, f.ICRC, len(f.IP))
			}
			if f.UDP.Checksum.OK == nil || !*f.UDP.Checksum.OK || f.EV.Value != 0xC0001003 {
				t.Errorf("udp %+v ev %+v", f.UDP.Checksum, f.EV)
			}
			if !strings.Contains(f.Summary, "TRIMMED") {
				t.Errorf("summary %q", f.Summary)
			}
		}},
		{name: "encapsulated_cut", dgram: trimCut, check: func(t *testing.T, f *Frame) {
			if !f.Trimmed || f.CutTo != 238+pcap.EthernetLen || len(f.Problems) != 0 || f.IP[0].DSCP != 49 || f.IP[1].DSCP != 10 {
				t.Errorf("trimmed %v cut to %d problems %q dscp %d/%d", f.Trimmed, f.CutTo, f.Problems, f.IP[0].DSCP, f.IP[1].DSCP)
			}
		}},
		{name: "encapsulated_truncated", dgram: truncated, problems: []string{"truncated datagram"}, check: func(t *testing.T, f *Frame) {
			if f.Trimmed || f.CutTo != 0 || len(f.Problems) != 1 || !strings.Contains(f.Problems[0], "truncated datagram") {
				t.Errorf("trimmed %v cut to %d problems %q", f.Trimmed, f.CutTo, f.Problems)
			}
		}},
		{name: "phantom", dgram: phPkt, wireLen: len(phPkt) + 4096 + 4, check: func(t *testing.T, f *Frame) {
			if f.Data.Len != 4096 || f.Data.Captured != 0 || f.Data.NotCaptured != 4100 || f.ICRC != nil || f.UDP.Checksum.OK != nil {
				t.Errorf("payload %+v icrc %+v udp %+v", f.Data, f.ICRC, f.UDP.Checksum)
			}
		}},
		{name: "sack", dgram: sackPkt, check: func(t *testing.T, f *Frame) {
			s := f.SACK
			want := [][2]int{{6, 7}, {9, 11}, {68, 68}}
			if s.CackPSN != 4 || s.SackBase != 5 || s.MName != "SKIP_ONCE" || !s.PR || !s.Rtx || s.AckPSN != 7 || s.MPR != 8 ||
				s.SackBitmap != "0x8000000000000076" || len(s.Sacked) != 3 || s.Sacked[0] != want[0] || s.Sacked[1] != want[1] || s.Sacked[2] != want[2] {
				t.Errorf("sack %+v", s)
			}
			if s.Entropy.Value != 0xC0001002 || s.Entropy.Plane != 1 || s.Entropy.Path != 2 {
				t.Errorf("entropy %+v", s.Entropy)
			}
			c := s.CCState
			if c.TxTimestamp != 0x1234 || c.OOOCount != 5 || !c.RC || c.RcvCwndPen != 64 || c.RcvdBytes != 300 {
				t.Errorf("cc %+v", c)
			}
			if f.IP[0].ECN != "CE" || !strings.Contains(f.Summary, "sacked 6-7,9-11,68") || !strings.Contains(f.Summary, " CE") {
				t.Errorf("summary %q", f.Summary)
			}
		}},
		{name: "nack", dgram: nackPkt, check: func(t *testing.T, f *Frame) {
			if f.NACK.ReasonName != "NO_BITMAP" || f.NACK.NackPSN != 0xFFFFFE || f.NACK.CCType != 2 || f.NACK.TxTimestamp != 77 || f.NACK.Entropy.Path != 3 {
				t.Errorf("nack %+v", f.NACK)
			}
		}},
		{name: "nack_unknown_reason", dgram: nack42, check: func(t *testing.T, f *Frame) {
			if f.NACK.Reason != 0x42 || f.NACK.ReasonName != "NackReason(0x42)" {
				t.Errorf("nack %+v", f.NACK)
			}
		}},
		{name: "probe", dgram: probePkt, check: func(t *testing.T, f *Frame) {
			if f.PETH.ProbeID != 42 || f.PETH.TSETH.TxTimestamp != 9 || !f.BTH.A {
				t.Errorf("peth %+v", f.PETH)
			}
		}},
		{name: "ack", dgram: ackPkt, check: func(t *testing.T, f *Frame) {
			if f.AETH.Syndrome != 0x1F || f.AETH.SyndromeName != "ACK" || f.AETH.MSN != 5 {
				t.Errorf("aeth %+v", f.AETH)
			}
		}},
		{name: "endpoint_request", dgram: erPkt, check: func(t *testing.T, f *Frame) {
			if f.ERTH.OpName != "PORT_STATUS_UPDATE" || f.ERTH.PortStatusMask != 5 || len(f.ERTH.PlanesUp) != 2 || f.ERTH.PlanesUp[1] != 2 || f.BTH.DestQP != 2 {
				t.Errorf("erth %+v", f.ERTH)
			}
		}},
		{name: "endpoint_response", dgram: epPkt, check: func(t *testing.T, f *Frame) {
			if f.EETH.OpName != "EV_PROBE" || f.EETH.Op != 1 || f.EETH.TxTimestamp != 3 || len(f.EETH.PlanesUp) != 2 {
				t.Errorf("eeth %+v", f.EETH)
			}
		}},
		{name: "snapped_sack", dgram: sackPkt, snaplen: 100, problems: []string{"truncated SETH+CC_STATE: capture limited to 100 bytes"}},
		{name: "truncated_sack", dgram: cut, problems: []string{"truncated SETH+CC_STATE: capture ends"}},
		{name: "bad_icrc", dgram: badICRC, problems: []string{"UDP checksum mismatch", "ICRC mismatch"}},
		{name: "unknown_opcode", dgram: unknown, problems: []string{"unknown MRC opcode 0xdf"}},
		{name: "roce_send_opcode", dgram: send, problems: []string{"not MRC: RoCE opcode 0x04 not decoded"}},
		{name: "roce_write_first", dgram: roceFirst, wireLen: len(roceFirst) + 4096 + 4, check: func(t *testing.T, f *Frame) {
			if !f.RoCE || f.MRC || f.EV != nil || f.RETH == nil || f.RETH.DMALen != 1<<20 || f.RETH.RKey != 0x62 ||
				f.Data == nil || f.Data.Len != 4096 || f.Data.NotCaptured != 4100 || f.BTH.OpcodeName != "RoCE RDMA_WRITE_FIRST" {
				t.Errorf("roce write first: roce %v mrc %v ev %+v reth %+v payload %+v bth %+v", f.RoCE, f.MRC, f.EV, f.RETH, f.Data, f.BTH)
			}
			if want := "RoCE RDMA_WRITE_FIRST qp 0x000100 psn 0 va 0x0000000100000000 dma_len 1048576 len 4096 (payload not captured)"; f.Summary != want {
				t.Errorf("summary %q, want %q", f.Summary, want)
			}
		}},
		{name: "roce_write_only_imm", dgram: roceImm, check: func(t *testing.T, f *Frame) {
			if !f.RoCE || f.ImmDt == nil || f.ImmDt.Value != 0xC0FFEE || f.Data == nil || f.Data.Len != 5 || f.Data.Pad != 3 ||
				f.ICRC == nil || f.ICRC.OK == nil || !*f.ICRC.OK || f.UDP.Checksum.OK == nil || !*f.UDP.Checksum.OK {
				t.Errorf("roce write only imm: immdt %+v payload %+v icrc %+v udp %+v", f.ImmDt, f.Data, f.ICRC, f.UDP.Checksum)
			}
		}},
		{name: "roce_nak", dgram: roceNAK, check: func(t *testing.T, f *Frame) {
			if !f.RoCE || f.AETH == nil || f.AETH.SyndromeName != "NAK PSN_SEQ_ERROR" || f.AETH.MSN != 4 || f.BTH.PSN != 27 || f.Data != nil ||
				f.ICRC == nil || f.ICRC.OK == nil || !*f.ICRC.OK {
				t.Errorf("roce nak: aeth %+v bth %+v payload %+v icrc %+v", f.AETH, f.BTH, f.Data, f.ICRC)
			}
		}},
		{name: "roce_cnp", dgram: roceCNP, check: func(t *testing.T, f *Frame) {
			if !f.RoCE || f.Data != nil || !strings.HasSuffix(f.Summary, "BECN") || f.ICRC == nil || f.ICRC.OK == nil || !*f.ICRC.OK {
				t.Errorf("roce cnp: payload %+v summary %q icrc %+v", f.Data, f.Summary, f.ICRC)
			}
		}},
		{name: "not_mrc_port", dgram: dns, problems: []string{"not MRC: UDP destination port 53"}},
		{name: "udp_length_inconsistent", dgram: longUDP, problems: []string{"inconsistent lengths: UDP length 200"}},
		{name: "ipv4", dgram: v4, check: func(t *testing.T, f *Frame) {
			if f.IP[0].Version != 4 || f.IP[0].DSCP != 46 || f.AETH == nil || f.EV != nil || f.ICRC.Note != "not verified over IPv4" || f.UDP.Checksum.OK != nil {
				t.Errorf("ipv4 %+v icrc %+v", f.IP[0], f.ICRC)
			}
		}},
		{name: "arp", raw: arp, problems: []string{"not MRC: not IP (EtherType 0x0806)"}},
	}
}

// writeEdgeCapture writes the edge cases to a pcapng file, one interface
// per case (named after it).
func writeEdgeCapture(t testing.TB, path string) []edgeCase {
	cases := edgeCases(t)
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.Options{Application: "mrc dump tests"})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		ifc, err := w.AddInterface(pcap.Interface{Name: c.name, Snaplen: c.snaplen,
			SrcMAC: [6]byte{2, 0, 0, 0, 0, 0xa}, DstMAC: [6]byte{2, 0, 0, 0, 0, 0xb}})
		if err != nil {
			t.Fatal(err)
		}
		ts := int64(i+1) * 1000
		if c.raw != nil {
			err = w.WritePacket(ifc, mtime.Time(ts), pcap.DirUnknown, c.raw, len(c.raw))
		} else {
			err = w.WriteDatagram(ifc, mtime.Time(ts), pcap.DirOutbound, c.dgram, max(c.wireLen, len(c.dgram)))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cases
}

// TestEdgeCases decodes testdata/edge.pcapng (regenerated with -update)
// and checks every packet's fields and problems, and the text and JSON
// outputs against their golden files.
func TestEdgeCases(t *testing.T) {
	path := filepath.Join("testdata", "edge.pcapng")
	cases := writeEdgeCapture(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./dump -update to create it)", err)
	}
	var out bytes.Buffer
	res, err := Run(bytes.NewReader(data), &out, Config{JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Packets != len(cases) {
		t.Fatalf("%d packets, want %d", res.Packets, len(cases))
	}
	dec := json.NewDecoder(&out)
	for i, c := range cases {
		var f Frame
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Run(c.name, func(t *testing.T) {
			if f.IfName != c.name || f.Number != i+1 || f.TimeNS != int64(i+1)*1000 {
				t.Errorf("metadata: n %d iface %q time %d", f.Number, f.IfName, f.TimeNS)
			}
			if len(f.Problems) != len(c.problems) {
				t.Errorf("problems %q, want %q", f.Problems, c.problems)
			} else {
				for j, p := range c.problems {
					if !strings.Contains(f.Problems[j], p) {
						t.Errorf("problem %d: %q, want it to contain %q", j, f.Problems[j], p)
					}
				}
			}
			if len(c.problems) == 0 && f.Summary == "" {
				t.Error("no summary")
			}
			if c.check != nil {
				c.check(t, &f)
			}
		})
	}
	for _, g := range []struct {
		file string
		cfg  Config
	}{{"edge.txt", Config{}}, {"edge.brief.txt", Config{Brief: true}}, {"edge.jsonl", Config{JSON: true}}} {
		var out bytes.Buffer
		if _, err := Run(bytes.NewReader(data), &out, g.cfg); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", g.file)
		if *update {
			if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s differs from the output (rerun with -update and review the diff):\n%s", golden, out.String())
		}
	}
}

// TestAgreesWithWire checks that Decode agrees with wire.Packet.Decode on
// the well-formed edge cases.
func TestAgreesWithWire(t *testing.T) {
	for _, c := range edgeCases(t) {
		if c.raw != nil || len(c.problems) > 0 {
			continue
		}
		if c.name == "ipv4" {
			continue // wire decodes IPv6 only
		}
		if c.name == "encapsulated_cut" {
			continue // wire leaves telling a cut trim by its DSCP to the endpoint
		}
		if strings.HasPrefix(c.name, "roce_") {
			agreesWithRoCE(t, c)
			continue
		}
		var p wire.Packet
		if err := p.Decode(c.dgram); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f := Decode(pcap.LinkRaw, c.dgram, max(c.wireLen, len(c.dgram)), nil)
		if f.BTH == nil || f.BTH.Opcode != int(p.BTH.Opcode) || f.BTH.PSN != int(p.BTH.PSN) || f.BTH.DestQP != int(p.BTH.DestQP) ||
			f.Trimmed != p.Trimmed || f.UDP.Length != int(p.UDP.Length) || len(f.Problems) != 0 {
			t.Errorf("%s: frame %+v disagrees with wire %+v", c.name, f, p)
		}
		if p.BTH.Opcode.IsData() && p.Trimmed == (f.Data != nil) {
			t.Errorf("%s: payload %+v with trimmed %v", c.name, f.Data, p.Trimmed)
		}
		if f.Data != nil && f.Data.Len != p.PayloadLen {
			t.Errorf("%s: payload length %d, wire says %d", c.name, f.Data.Len, p.PayloadLen)
		}
	}
}

// agreesWithRoCE checks that Decode agrees with roce.Packet.Decode on a
// RoCE edge case.
func agreesWithRoCE(t *testing.T, c edgeCase) {
	var p roce.Packet
	if err := p.Decode(c.dgram); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	f := Decode(pcap.LinkRaw, c.dgram, max(c.wireLen, len(c.dgram)), nil)
	if !f.RoCE || f.BTH == nil || f.BTH.Opcode != int(p.BTH.Opcode) || f.BTH.PSN != int(p.BTH.PSN) || f.BTH.DestQP != int(p.BTH.DestQP) ||
		f.UDP.Length != int(p.UDP.Length) || len(f.Problems) != 0 {
		t.Errorf("%s: frame %+v disagrees with roce %+v", c.name, f, p)
	}
	if (f.Data != nil) != p.Opcode().IsData() || f.Data != nil && f.Data.Len != p.PayloadLen {
		t.Errorf("%s: payload %+v, roce says %d bytes", c.name, f.Data, p.PayloadLen)
	}
	if p.Opcode().HasRETH() != (f.RETH != nil) || p.Opcode() == roce.OpAck != (f.AETH != nil) ||
		f.AETH != nil && (f.AETH.Syndrome != int(p.AETH.Syndrome) || f.AETH.MSN != int(p.AETH.MSN)) {
		t.Errorf("%s: reth %+v aeth %+v, roce %+v", c.name, f.RETH, f.AETH, p)
	}
}

func TestNotACapture(t *testing.T) {
	if _, err := Run(strings.NewReader("not a capture at all"), &bytes.Buffer{}, Config{}); err != pcap.ErrNotCapture {
		t.Errorf("err = %v", err)
	}
}

// TestDamagedCapture checks that a capture cut short prints every whole
// packet and then says where it stopped.
func TestDamagedCapture(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "edge.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := Run(bytes.NewReader(data[:len(data)-30]), &out, Config{Brief: true})
	if err == nil || res.Packets != len(edgeCases(t))-1 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if !strings.Contains(out.String(), "! capture damaged, reading stops") {
		t.Errorf("output does not report the damage:\n%s", out.String())
	}
}

func TestLinkTypes(t *testing.T) {
	var ack []byte
	for _, c := range edgeCases(t) {
		if c.name == "ack" {
			ack = c.dgram
		}
	}
	sll := append(make([]byte, 14), 0x86, 0xdd)
	sll2 := append([]byte{0x86, 0xdd}, make([]byte, 18)...)
	null := []byte{0x1e, 0, 0, 0} // AF_INET6 on macOS, little-endian
	loop := []byte{0, 0, 0, 24}
	vlan := []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x81, 0, 0x00, 0x64, 0x86, 0xdd}
	for _, c := range []struct {
		lt     pcap.LinkType
		prefix []byte
	}{{pcap.LinkLinuxSLL, sll}, {pcap.LinkLinuxSLL2, sll2}, {pcap.LinkNull, null}, {pcap.LinkLoop, loop},
		{pcap.LinkEthernet, vlan}, {pcap.LinkIPv6, nil}, {pcap.LinkRaw, nil}} {
		b := append(bytes.Clone(c.prefix), ack...)
		f := Decode(c.lt, b, len(b), nil)
		if f.AETH == nil || len(f.Problems) != 0 {
			t.Errorf("%v: %+v problems %q", c.lt, f.AETH, f.Problems)
		}
	}
	f := Decode(pcap.LinkEthernet, append(vlan, ack...), 0, nil)
	if len(f.Link.VLANs) != 1 || f.Link.VLANs[0] != 100 {
		t.Errorf("vlans %v", f.Link.VLANs)
	}
	if f := Decode(pcap.LinkType(147), ack, len(ack), nil); len(f.Problems) != 1 || f.MRC {
		t.Errorf("unknown link type: %q", f.Problems)
	}
}

// FuzzDecode feeds arbitrary frames to Decode, for every link type: it
// must not panic (a recovered panic is reported as an internal error,
// which fails the test), and what it reports must be consistent.
func FuzzDecode(f *testing.F) {
	for _, c := range edgeCases(f) {
		if c.raw != nil {
			f.Add(uint16(pcap.LinkEthernet), c.raw, 0)
			continue
		}
		f.Add(uint16(pcap.LinkRaw), c.dgram, c.wireLen)
	}
	f.Fuzz(func(t *testing.T, lt uint16, b []byte, orig int) {
		fr := Decode(pcap.LinkType(lt), b, orig, nil)
		for _, p := range fr.Problems {
			if strings.HasPrefix(p, internalError) {
				t.Fatal(p)
			}
		}
		if fr.Summary == "" {
			t.Fatal("empty summary")
		}
		if fr.MRC && fr.BTH == nil {
			t.Fatal("MRC without a BTH")
		}
		if fr.Data != nil && (fr.Data.Captured > fr.Data.Len || fr.Data.Captured < 0) {
			t.Fatalf("payload %+v", fr.Data)
		}
		if _, err := json.Marshal(fr); err != nil {
			t.Fatal(err)
		}
		if err := WriteText(&bytes.Buffer{}, fr, false); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzRun feeds arbitrary bytes to Run as a capture file: it must never
// panic and never report an internal error.
func FuzzRun(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "edge.pcapng")); err == nil {
		f.Add(data)
	}
	f.Add([]byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		_, _ = Run(bytes.NewReader(b), &out, Config{})
		if bytes.Contains(out.Bytes(), []byte(internalError)) {
			t.Fatalf("internal error:\n%s", out.String())
		}
	})
}
