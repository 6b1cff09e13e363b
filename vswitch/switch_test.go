package vswitch

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/wire"
)

var block = [16]byte{0xfc, 0xbb, 0, 0}

func usid(ids ...uint32) [16]byte { return wire.F3216.Container(block, ids...) }

// dataPacket builds a phantom WRITE packet (4096 payload bytes not carried)
// in the given encapsulation, addressed to dst (the outer destination when
// encapsulated), with EV ev and DSCP dscp.
func dataPacket(t testing.TB, encap bool, dst [16]byte, ev uint32, dscp uint8) ([]byte, int) {
	t.Helper()
	var p wire.Packet
	src := [16]byte{0xfd, 1}
	final := [16]byte{0xfd, 2}
	tc := dscp<<2 | uint8(wire.ECT0)
	p.IP = wire.IPv6{TrafficClass: tc, NextHeader: wire.ProtoUDP, HopLimit: 64, Src: src, Dst: dst}
	if encap {
		p.Encap = true
		p.Outer = wire.IPv6{TrafficClass: tc, NextHeader: wire.ProtoIPv6, HopLimit: 64, Src: src, Dst: dst}
		p.IP.Dst = final
	}
	p.UDP = wire.UDP{DstPort: wire.UDPPortRoCEv2}
	p.SetEV(wire.EV(ev))
	p.BTH = wire.BTH{Opcode: wire.OpWriteMiddle, DestQP: 0x100, PSN: 7}
	p.RETH = wire.RETH{VA: 1 << 32, RKey: 1, DMALen: 1 << 20}
	p.PayloadLen = 4096
	b := wire.AppendPacket(make([]byte, 0, 256), &p, nil)
	return b, p.Len()
}

// ctrlPacket builds a probe (a whole, small packet) with DSCP dscp.
func ctrlPacket(t testing.TB, dst [16]byte, dscp uint8) []byte {
	t.Helper()
	var p wire.Packet
	p.IP = wire.IPv6{TrafficClass: dscp<<2 | uint8(wire.ECT0), NextHeader: wire.ProtoUDP, HopLimit: 64, Dst: dst}
	p.UDP = wire.UDP{DstPort: wire.UDPPortRoCEv2}
	p.BTH = wire.BTH{Opcode: wire.OpProbe, DestQP: 0x100}
	return wire.AppendPacket(nil, &p, nil)
}

func newSwitch(t testing.TB, cfg Config) *Switch {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSRv6Forwarding(t *testing.T) {
	for _, encap := range []bool{false, true} {
		s := newSwitch(t, Config{Name: "t0", Ports: 8, Addr: usid(0x0101)})
		if err := s.AddRoute(usid(0x0202), 48, 3); err != nil {
			t.Fatal(err)
		}
		if err := s.AddRoute(usid(0x0404), 48, 5); err != nil {
			t.Fatal(err)
		}
		// Our uSID is active: shift, then route on the next one.
		pkt, _ := dataPacket(t, encap, usid(0x0101, 0x0202, 0x0303), 1, 10)
		out, drop := s.Forward(pkt, 0)
		if drop != DropNone || out != 3 {
			t.Fatalf("encap=%v: forward = %d, %v; want 3", encap, out, drop)
		}
		if got, want := *wire.OuterDst(pkt), usid(0x0202, 0x0303); got != want {
			t.Errorf("encap=%v: destination after shift %x, want %x", encap, got, want)
		}
		if pkt[7] != 63 {
			t.Errorf("hop limit %d, want 63", pkt[7])
		}
		// Someone else's uSID is active: plain lookup, no shift.
		pkt, _ = dataPacket(t, encap, usid(0x0404, 0x0303), 1, 10)
		if out, drop := s.Forward(pkt, 0); drop != DropNone || out != 5 {
			t.Fatalf("transit forward = %d, %v; want 5", out, drop)
		}
		if got, want := *wire.OuterDst(pkt), usid(0x0404, 0x0303); got != want {
			t.Errorf("transit destination changed to %x", got)
		}
		// The container ends at this switch.
		pkt, _ = dataPacket(t, encap, usid(0x0101), 1, 10)
		if _, drop := s.Forward(pkt, 0); drop != DropNoRoute {
			t.Errorf("container ending here: %v, want no_route", drop)
		}
		// No route.
		pkt, _ = dataPacket(t, encap, usid(0x0101, 0x0999), 1, 10)
		if _, drop := s.Forward(pkt, 0); drop != DropNoRoute {
			t.Errorf("unknown uSID: %v, want no_route", drop)
		}
		if s.Counters.Drops[DropNoRoute] != 2 || s.Counters.Received != 4 {
			t.Errorf("counters %+v", s.Counters)
		}
	}
}

func TestHopLimitAndMalformed(t *testing.T) {
	s := newSwitch(t, Config{Ports: 2, Addr: usid(1)})
	s.SetDefault(1)
	pkt, _ := dataPacket(t, false, usid(2), 0, 10)
	pkt[7] = 1
	if _, d := s.Forward(pkt, 0); d != DropHopLimit {
		t.Errorf("hop limit 1: %v", d)
	}
	if _, d := s.Forward(pkt[:20], 0); d != DropMalformed {
		t.Errorf("short packet: %v", d)
	}
	pkt[7] = 64
	if out, d := s.Forward(pkt, 0); d != DropNone || out != 1 {
		t.Errorf("default route: %d %v", out, d)
	}
}

func TestECMPSpreadsFlowsAndKeepsThemOnOnePath(t *testing.T) {
	s := newSwitch(t, Config{Ports: 5, Mode: ModeECMP, Seed: 1})
	if err := s.AddRoute(usid(0x0202), 48, 1, 2, 3, 4); err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	for ev := range uint32(400) {
		a, _ := dataPacket(t, false, usid(0x0202, 0x0303), ev, 10)
		b, _ := dataPacket(t, false, usid(0x0202, 0x0303), ev, 10)
		oa, _ := s.Forward(a, 0)
		ob, _ := s.Forward(b, 0)
		if oa != ob {
			t.Fatalf("EV %d hashed to %d then %d", ev, oa, ob)
		}
		count[oa]++
	}
	for p := 1; p <= 4; p++ {
		if count[p] < 60 {
			t.Errorf("port %d got %d of 400 flows: %v", p, count[p], count)
		}
	}
	// Another seed maps flows differently (no polarisation).
	s2 := newSwitch(t, Config{Ports: 5, Mode: ModeECMP, Seed: 2})
	s2.AddRoute(usid(0x0202), 48, 1, 2, 3, 4)
	same := 0
	for ev := range uint32(400) {
		a, _ := dataPacket(t, false, usid(0x0202, 0x0303), ev, 10)
		b, _ := dataPacket(t, false, usid(0x0202, 0x0303), ev, 10)
		oa, _ := s.Forward(a, 0)
		ob, _ := s2.Forward(b, 0)
		if oa == ob {
			same++
		}
	}
	if same > 200 {
		t.Errorf("seeds 1 and 2 agree on %d of 400 flows", same)
	}
}

func TestLongestPrefix(t *testing.T) {
	s := newSwitch(t, Config{Ports: 4, Mode: ModeECMP})
	s.AddRoute(usid(0x0202), 48, 1)
	s.AddRoute(usid(0x0202, 0x0007), 64, 2)
	s.SetDefault(3)
	for _, tc := range []struct {
		dst  [16]byte
		want int
	}{{usid(0x0202, 0x0007), 2}, {usid(0x0202, 0x0008), 1}, {usid(0x0303), 3}} {
		pkt, _ := dataPacket(t, false, tc.dst, 0, 10)
		if out, d := s.Forward(pkt, 0); out != tc.want || d != DropNone {
			t.Errorf("%x: %d %v, want %d", tc.dst, out, d, tc.want)
		}
	}
}

func TestStructuredEV(t *testing.T) {
	s := newSwitch(t, Config{Ports: 9, Mode: ModeSTEV, EVShift: 4, EVBits: 3})
	s.AddRoute(usid(0x0202), 48, 1, 2, 3, 4, 5, 6, 7, 8)
	for _, encap := range []bool{false, true} {
		for f := range uint32(8) {
			pkt, _ := dataPacket(t, encap, usid(0x0202), f<<4|0xF00F, 10)
			if out, d := s.Forward(pkt, 0); d != DropNone || out != int(f)+1 {
				t.Errorf("encap=%v field %d: port %d %v", encap, f, out, d)
			}
		}
	}
}

func TestECNMarking(t *testing.T) {
	q := QueueConfig{Buffer: 1 << 20, ECNMin: 10_000, ECNMax: 20_000}
	for _, tc := range []struct {
		name           string
		lastHop, onLH  bool
		queued         int
		wantMarked     bool
		wantMarkedSome bool
	}{
		{"below min", false, false, 5_000, false, false},
		{"above max", false, false, 30_000, true, true},
		{"last hop off", true, false, 30_000, false, false},
		{"last hop on", true, true, 30_000, true, true},
	} {
		s := newSwitch(t, Config{Ports: 2})
		qc := q
		qc.LastHop, qc.ECNLastHop = tc.lastHop, tc.onLH
		s.SetPortQueue(1, qc)
		h := Handle(0)
		for s.ports[1].dataBytes < tc.queued {
			pkt, wl := dataPacket(t, false, usid(1), 0, 10)
			s.Enqueue(0, 1, 0, h, pkt, wl)
			h++
		}
		s.Counters.Marked = 0
		pkt, wl := dataPacket(t, false, usid(1), 0, 10)
		v := s.Enqueue(0, 1, 0, h, pkt, wl)
		if v.Marked != tc.wantMarked || (wire.OuterECN(pkt) == wire.CE) != tc.wantMarked {
			t.Errorf("%s: marked %v (ECN %v), want %v", tc.name, v.Marked, wire.OuterECN(pkt), tc.wantMarked)
		}
	}
	// Between the thresholds the marking is probabilistic.
	s := newSwitch(t, Config{Ports: 2, Queue: q})
	marked := 0
	for i := range 1000 {
		s.ports[1].dataBytes = 15_000 // half way
		pkt, wl := dataPacket(t, false, usid(1), 0, 10)
		if s.Enqueue(0, 1, 0, Handle(i), pkt, wl).Marked {
			marked++
		}
	}
	if marked < 400 || marked > 600 {
		t.Errorf("half-way marking rate %d/1000, want about 500", marked)
	}
}

// TestECNSingleThreshold: with ECNK set, marking is a step at K (DCTCP's
// switch): every ECN-capable packet that finds more than K bytes queued
// is marked, none at or below K, whatever the RED thresholds say; a
// Not-ECT packet is never marked; last-hop ports obey ECNLastHop.
func TestECNSingleThreshold(t *testing.T) {
	const k = 20_000
	for _, tc := range []struct {
		name          string
		queued        int
		notECT        bool
		lastHop, onLH bool
		want          bool
	}{
		{"below K", 16_000, false, false, false, false},
		{"just above K", 21_000, false, false, false, true},
		{"far above K", 200_000, false, false, false, true},
		{"not ECN-capable", 30_000, true, false, false, false},
		{"last hop off", 30_000, false, true, false, false},
		{"last hop on", 30_000, false, true, true, true},
	} {
		s := newSwitch(t, Config{Ports: 2})
		// RED thresholds far below K would mark everything if they applied.
		if err := s.SetPortQueue(1, QueueConfig{Buffer: 1 << 20, ECNMin: 1, ECNMax: 2, ECNK: k, LastHop: tc.lastHop, ECNLastHop: tc.onLH}); err != nil {
			t.Fatal(err)
		}
		h := Handle(0)
		for s.ports[1].dataBytes < tc.queued {
			pkt, wl := dataPacket(t, false, usid(1), 0, 10)
			s.Enqueue(0, 1, 0, h, pkt, wl)
			h++
		}
		before := s.ports[1].dataBytes
		pkt, wl := dataPacket(t, false, usid(1), 0, 10)
		if tc.notECT {
			wire.SetOuterECN(pkt, wire.NotECT)
		}
		v := s.Enqueue(0, 1, 0, h, pkt, wl)
		if v.Marked != tc.want || (wire.OuterECN(pkt) == wire.CE) != tc.want {
			t.Errorf("%s (%d bytes queued): marked %v, want %v", tc.name, before, v.Marked, tc.want)
		}
	}
	// Every packet over K is marked: a deterministic step, no draws.
	s := newSwitch(t, Config{Ports: 2, Queue: QueueConfig{Buffer: 1 << 20, ECNK: k}})
	marked := 0
	for i := range 1000 {
		s.ports[1].dataBytes = k + 1
		pkt, wl := dataPacket(t, false, usid(1), 0, 10)
		if s.Enqueue(0, 1, 0, Handle(i), pkt, wl).Marked {
			marked++
		}
	}
	if marked != 1000 {
		t.Errorf("above K: %d/1000 marked, want all", marked)
	}
	if _, err := New(Config{Ports: 2, Queue: QueueConfig{ECNK: -1}}); err == nil {
		t.Error("negative ECNK accepted")
	}
}

// TestECMPHashesTCPPorts: two TCP connections between the same hosts that
// differ only in their ports spread over an ECMP group (the 5-tuple hash).
func TestECMPHashesTCPPorts(t *testing.T) {
	s := newSwitch(t, Config{Ports: 5, Mode: ModeECMP, Seed: 1})
	if err := s.AddRoute(usid(0x0202), 48, 1, 2, 3, 4); err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	for sport := range uint16(400) {
		pkt := make([]byte, wire.IPv6Len+20)
		ip := wire.IPv6{NextHeader: protoTCP, HopLimit: 64, Src: [16]byte{0xfd, 1}, Dst: usid(0x0202, 3), PayloadLen: 20}
		ip.Append(pkt[:0])
		pkt[wire.IPv6Len], pkt[wire.IPv6Len+1] = byte(sport>>8), byte(sport)
		out, d := s.Forward(pkt, 0)
		if d != DropNone {
			t.Fatal(d)
		}
		count[out]++
	}
	for p := 1; p <= 4; p++ {
		if count[p] < 60 {
			t.Errorf("port %d got %d of 400 connections: %v", p, count[p], count)
		}
	}
}

func TestTrimming(t *testing.T) {
	for _, lastHop := range []bool{false, true} {
		for _, encap := range []bool{false, true} {
			s := newSwitch(t, Config{Ports: 2, Queue: QueueConfig{Buffer: 100_000, TrimAt: 3 * 4300, Trim: true, LastHop: lastHop}})
			var verdicts []Verdict
			var pkts [][]byte
			for i := range 5 {
				pkt, wl := dataPacket(t, encap, usid(1), 0, wire.DefaultDSCP.Data)
				v := s.Enqueue(mtime.Picos(i), 1, 0, Handle(i), pkt, wl)
				verdicts = append(verdicts, v)
				pkts = append(pkts, pkt[:v.Len])
			}
			for i, v := range verdicts {
				wantTrim := i >= 3
				if v.Drop != DropNone || v.Trimmed != wantTrim {
					t.Fatalf("packet %d: %+v", i, v)
				}
				if !wantTrim {
					continue
				}
				var p wire.Packet
				if err := p.Decode(pkts[i]); err != nil || !p.Trimmed {
					t.Fatalf("trimmed packet %d does not decode as trimmed: %v", i, err)
				}
				want := wire.DefaultDSCP.Trimmed
				if lastHop {
					want = wire.DefaultDSCP.TrimmedLastHop
				}
				if got := wire.OuterTrafficClass(pkts[i]) >> 2; got != want || v.WireLen != len(pkts[i]) {
					t.Errorf("trimmed DSCP %d wire %d, want %d and %d", got, v.WireLen, want, len(pkts[i]))
				}
			}
			// Strict priority: the trimmed headers leave first.
			var order []Handle
			for {
				d, ok := s.Dequeue(10, 1)
				if !ok {
					break
				}
				order = append(order, d.Handle)
			}
			if want := []Handle{3, 4, 0, 1, 2}; !equalHandles(order, want) {
				t.Errorf("dequeue order %v, want %v", order, want)
			}
			c := s.Counters
			if lastHop && c.TrimmedLastHop != 2 || !lastHop && c.Trimmed != 2 {
				t.Errorf("counters %+v", c)
			}
		}
	}
}

// TestNoTrimClass: data with DSCP NoTrim (DSCP_NO_TRIM) is never trimmed,
// on mid-fabric and last-hop ports alike: past the trim threshold it still
// joins the data queue, and past the buffer it is tail-dropped. Trimmable
// data behind it is trimmed as before.
func TestNoTrimClass(t *testing.T) {
	for _, lastHop := range []bool{false, true} {
		s := newSwitch(t, Config{Ports: 2, Queue: QueueConfig{Buffer: 5 * 4300, TrimAt: 2 * 4300, Trim: true, LastHop: lastHop}})
		var drops, trims int
		for i := range 8 {
			pkt, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.NoTrim)
			v := s.Enqueue(0, 1, 0, Handle(i), pkt, wl)
			if v.Trimmed {
				trims++
			}
			if v.Drop == DropQueueFull {
				drops++
			} else if v.Drop != DropNone {
				t.Fatalf("packet %d: %+v", i, v)
			}
			if got := wire.OuterTrafficClass(pkt) >> 2; got != wire.DefaultDSCP.NoTrim {
				t.Fatalf("packet %d: DSCP rewritten to %d", i, got)
			}
		}
		if trims != 0 || drops != 3 {
			t.Fatalf("lastHop %v: %d no-trim packets trimmed, %d tail-dropped; want 0 and 3 (five 4 KiB packets fit in 21.5 kB)", lastHop, trims, drops)
		}
		pkt, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
		if v := s.Enqueue(0, 1, 0, 99, pkt, wl); !v.Trimmed {
			t.Fatalf("trimmable data over the threshold: %+v", v)
		}
	}
}

func equalHandles(a, b []Handle) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTailDropAndHeaderQueue(t *testing.T) {
	ctrlLen := len(ctrlPacket(t, usid(1), wire.DefaultDSCP.Control))
	s := newSwitch(t, Config{Ports: 2, Queue: QueueConfig{Buffer: 10_000, HeaderBuffer: 4 * ctrlLen}})
	drops := 0
	for i := range 5 {
		pkt, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
		if s.Enqueue(0, 1, 0, Handle(i), pkt, wl).Drop == DropQueueFull {
			drops++
		}
	}
	if drops != 3 {
		t.Errorf("%d tail drops, want 3 (two 4 KiB packets fit in 10 kB)", drops)
	}
	// Control packets bypass the full data queue, up to the header buffer.
	ctrlDrops := 0
	for i := range 5 {
		pkt := ctrlPacket(t, usid(1), wire.DefaultDSCP.Control)
		if v := s.Enqueue(0, 1, 0, Handle(10+i), pkt, len(pkt)); v.Drop == DropHeaderFull {
			ctrlDrops++
		} else if v.Drop != DropNone {
			t.Fatal(v)
		}
	}
	if ctrlDrops != 1 {
		t.Errorf("%d header-queue drops, want 1", ctrlDrops)
	}
	d, _ := s.Dequeue(0, 1)
	if d.Handle != 10 {
		t.Errorf("first out %d, want the first control packet", d.Handle)
	}
	// A probe (data DSCP, not trimmable) is dropped rather than trimmed.
	s2 := newSwitch(t, Config{Ports: 2, Queue: QueueConfig{Buffer: 10_000, TrimAt: 1, Trim: true}})
	probe := ctrlPacket(t, usid(1), wire.DefaultDSCP.Data)
	pkt, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
	s2.Enqueue(0, 1, 0, 0, pkt, wl)
	if v := s2.Enqueue(0, 1, 0, 1, probe, len(probe)); v.Drop != DropQueueFull {
		t.Errorf("untrimmable probe over the trim threshold: %+v", v)
	}
}

func TestLosslessPFC(t *testing.T) {
	q := QueueConfig{Buffer: 20_000, Lossless: true, PFCXoff: 12_000, PFCXon: 5_000}
	s := newSwitch(t, Config{Ports: 3, Queue: q})
	var pauses int
	for i := range 10 {
		pkt, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
		v := s.Enqueue(0, 1, 2, Handle(i), pkt, wl)
		if v.Drop != DropNone {
			t.Fatalf("lossless queue dropped: %+v", v)
		}
		if v.Pause {
			pauses++
			if i != 2 {
				t.Errorf("pause at packet %d, want 2 (over 12 kB)", i)
			}
		}
	}
	if pauses != 1 {
		t.Errorf("%d pauses, want 1", pauses)
	}
	// A paused port sends headers but no data.
	s.SetPaused(1, true)
	if _, ok := s.Dequeue(0, 1); ok {
		t.Error("paused port dequeued data")
	}
	s.SetPaused(1, false)
	resumed := -1
	for i := range 10 {
		d, ok := s.Dequeue(0, 1)
		if !ok {
			t.Fatal("queue ran dry")
		}
		if d.Resume >= 0 {
			resumed = i
			if d.Resume != 2 {
				t.Errorf("resume ingress %d, want 2", d.Resume)
			}
		}
	}
	if resumed != 8 {
		t.Errorf("resumed after dequeue %d, want 8 (at most 5 kB left)", resumed)
	}
}

func TestPortDownBlackholeFlush(t *testing.T) {
	s := newSwitch(t, Config{Ports: 2, Addr: usid(1)})
	s.AddRoute(usid(2), 48, 1)
	pkt, wl := dataPacket(t, false, usid(2), 0, 10)
	s.Enqueue(0, 1, 0, 7, pkt, wl)
	var freed []Handle
	s.Flush(1, func(h Handle) { freed = append(freed, h) }, nil)
	if len(freed) != 1 || freed[0] != 7 || s.Backlog(1) {
		t.Errorf("flush freed %v", freed)
	}
	s.SetPortUp(1, false)
	if v := s.Enqueue(0, 1, 0, 8, pkt, wl); v.Drop != DropLinkDown {
		t.Errorf("down port: %+v", v)
	}
	s.SetBlackhole(true)
	if _, d := s.Forward(pkt, 0); d != DropBlackhole {
		t.Errorf("blackhole: %v", d)
	}
	if s.Counters.Drops[DropLinkDown] != 2 || s.Counters.Drops[DropBlackhole] != 1 {
		t.Errorf("counters %+v", s.Counters.Drops)
	}
}

func TestSerialization(t *testing.T) {
	if got := SerializationPs(4096+128, 100e9); got != 337_920 {
		t.Errorf("4224 B at 100 Gb/s = %d ps, want 337920", got)
	}
	if got := SerializationPs(1, 3); got != 2_666_666_666_667 {
		t.Errorf("rounding: %d", got)
	}
	tx := Transmitter{BitsPerSec: 800e9}
	if d := tx.Start(1000, 100); d != 2000 || tx.Free(1999) || !tx.Free(2000) {
		t.Errorf("start: done %d", d)
	}
	if d := tx.Start(1500, 100); d != 3000 {
		t.Errorf("back to back: done %d, want 3000", d)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Ports: 0},
		{Ports: 70000},
		{Ports: 2, Mode: 9},
		{Ports: 2, Mode: ModeSTEV},
		{Ports: 2, Format: wire.USIDFormat{BlockBits: 64, CSIDBits: 16}},
		{Ports: 2, Queue: QueueConfig{ECNMin: 10, ECNMax: 5}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err %v", cfg, err)
		}
	}
	s := newSwitch(t, Config{Ports: 2})
	if err := s.AddRoute(usid(1), 48, 2); !errors.Is(err, ErrConfig) {
		t.Errorf("route to port 2 of 2: %v", err)
	}
	if err := s.AddRoute(usid(1), 48); !errors.Is(err, ErrConfig) {
		t.Errorf("route without next hop: %v", err)
	}
}

func TestZeroAllocs(t *testing.T) {
	s := newSwitch(t, Config{Ports: 4, Addr: usid(1), Queue: QueueConfig{Trim: true, TrimAt: 8000, ECNMin: 1, ECNMax: 9000}})
	s.AddRoute(usid(2), 48, 3)
	orig, wl := dataPacket(t, true, usid(1, 2, 3), 5, wire.DefaultDSCP.Data)
	pkt := make([]byte, len(orig))
	// Warm the rings up.
	for i := range 64 {
		copy(pkt, orig)
		out, _ := s.Forward(pkt, 0)
		s.Enqueue(0, out, 0, Handle(i), pkt, wl)
	}
	for s.Backlog(3) {
		s.Dequeue(0, 3)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		copy(pkt, orig)
		out, _ := s.Forward(pkt, 0)
		s.Enqueue(0, out, 0, 1, pkt, wl)
		copy(pkt, orig)
		out, _ = s.Forward(pkt, 0)
		s.Enqueue(0, out, 0, 2, pkt, wl)
		copy(pkt, orig)
		out, _ = s.Forward(pkt, 0)
		s.Enqueue(0, out, 0, 3, pkt, wl) // trimmed
		for s.Backlog(3) {
			s.Dequeue(0, 3)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per forward/enqueue/dequeue round", allocs)
	}
}

// BenchmarkForward measures Forward + Enqueue + Dequeue of one SRv6 data
// packet (uSID shift, static lookup, ECN check): the per-hop cost of the
// switch logic.
func BenchmarkForward(b *testing.B) {
	for _, mode := range []Mode{ModeSRv6, ModeECMP} {
		b.Run(mode.String(), func(b *testing.B) {
			s := newSwitch(b, Config{Ports: 64, Mode: mode, Addr: usid(1), Queue: QueueConfig{ECNMin: 100_000, ECNMax: 400_000}})
			for i := range 64 {
				s.AddRoute(usid(uint32(0x100+i)), 48, i)
			}
			s.AddRoute(usid(2), 48, 1, 2, 3, 4, 5, 6, 7, 8)
			dst := usid(1, 2, 3)
			if mode == ModeECMP {
				dst = usid(2, 3)
			}
			orig, wl := dataPacket(b, true, dst, 5, wire.DefaultDSCP.Data)
			pkt := make([]byte, len(orig))
			b.ReportAllocs()
			for b.Loop() {
				copy(pkt, orig)
				out, _ := s.Forward(pkt, 0)
				s.Enqueue(0, out, 0, 1, pkt, wl)
				s.Dequeue(0, out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}

// TestPortCounters: a port counts what it sent, trimmed, marked and
// dropped and the most it held; with NoPortCounters it keeps only the
// most it held, and forwards the same.
func TestPortCounters(t *testing.T) {
	q := QueueConfig{Buffer: 3 * 4300, TrimAt: 2 * 4300, Trim: true, ECNK: 1}
	var counted [2]PortCounters
	for i, off := range []bool{false, true} {
		s := newSwitch(t, Config{Ports: 3, Queue: q, NoPortCounters: off})
		var want PortCounters
		for h := range 6 {
			pkt, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
			v := s.Enqueue(0, 1, 0, Handle(h), pkt, wl)
			if v.Marked {
				want.Marked++
			}
			if v.Trimmed {
				want.Trimmed++
			}
			if v.Drop != DropNone {
				want.Dropped++
			}
			d, h := s.Queued(1)
			want.MaxBytes = max(want.MaxBytes, int64(d+h))
		}
		s.SetPortUp(1, false)
		pkt, wl := dataPacket(t, false, usid(1), 0, wire.DefaultDSCP.Data)
		if v := s.Enqueue(0, 1, 0, 9, pkt, wl); v.Drop != DropLinkDown {
			t.Fatalf("enqueue on a down port: %+v", v)
		}
		want.Dropped++
		s.SetPortUp(1, true)
		for {
			d, ok := s.Dequeue(0, 1)
			if !ok {
				break
			}
			want.Sent++
			want.SentBytes += uint64(d.WireLen)
		}
		if want.Marked == 0 || want.Trimmed == 0 || want.Sent == 0 {
			t.Fatalf("the test marks, trims and sends nothing: %+v", want)
		}
		if off {
			want = PortCounters{MaxBytes: want.MaxBytes}
		}
		if got := s.PortCounters(1); got != want {
			t.Errorf("NoPortCounters %v: port counters %+v, want %+v", off, got, want)
		}
		if got := s.PortCounters(2); got != (PortCounters{}) {
			t.Errorf("NoPortCounters %v: idle port's counters %+v", off, got)
		}
		counted[i] = s.PortCounters(1)
	}
	if counted[0].MaxBytes != counted[1].MaxBytes {
		t.Errorf("MaxBytes %d with the port counters, %d without", counted[0].MaxBytes, counted[1].MaxBytes)
	}
}

// TestPortSize: a port's queues and state take 64 bytes, its other
// counters kept apart: a large fabric's switches have millions of ports.
func TestPortSize(t *testing.T) {
	if n := unsafe.Sizeof(port{}); n != 64 {
		t.Fatalf("a port takes %d bytes, want 64", n)
	}
}

// TestTrimTo: with QueueConfig.TrimTo a trim cuts the datagram to that
// many bytes and rewrites the outermost DSCP only, leaving the lengths
// as they were, as a fixed-size trimming switch (NVIDIA Spectrum) does;
// the receiver takes it as a trimmed header by its DSCP
// (docs/spec-gaps.md row 22). A packet no longer than that is redirected
// whole, with the trimmed DSCP.
func TestTrimTo(t *testing.T) {
	const cut = 238 // a 256-byte frame
	for _, lastHop := range []bool{false, true} {
		for _, encap := range []bool{false, true} {
			s := newSwitch(t, Config{Ports: 2, Queue: QueueConfig{Buffer: 100_000, TrimAt: 3 * 4300, Trim: true, TrimTo: cut, LastHop: lastHop}})
			var v Verdict
			var pkt []byte
			var wl int
			for i := range 4 {
				pkt, wl = dataPacket(t, encap, usid(1), 0, wire.DefaultDSCP.Data)
				v = s.Enqueue(mtime.Picos(i), 1, 0, Handle(i), pkt, wl)
			}
			// dataPacket's are phantoms: headers only, wl on the wire.
			if !v.Trimmed || v.Len != min(len(pkt), cut) || v.WireLen != cut {
				t.Fatalf("lastHop %v encap %v: the fourth packet %+v, want trimmed to %d bytes", lastHop, encap, v, cut)
			}
			want := wire.DefaultDSCP.Trimmed
			if lastHop {
				want = wire.DefaultDSCP.TrimmedLastHop
			}
			var p wire.Packet
			if err := p.Decode(pkt[:v.Len]); err != nil {
				t.Fatalf("lastHop %v encap %v: the cut packet does not decode: %v", lastHop, encap, err)
			}
			if got := wire.OuterTrafficClass(pkt) >> 2; got != want || p.Trimmed || p.Len() != wl {
				t.Errorf("lastHop %v encap %v: outer DSCP %d (want %d), decodes as trimmed %v, length fields %d (want %d, as before the cut)",
					lastHop, encap, got, want, p.Trimmed, p.Len(), wl)
			}
			if encap && p.IP.DSCP() != wire.DefaultDSCP.Data {
				t.Errorf("lastHop %v: the inner DSCP became %d: a fixed-size trim rewrites the outer header only", lastHop, p.IP.DSCP())
			}
			// A packet no longer than TrimTo is redirected whole, marked.
			s = newSwitch(t, Config{Ports: 2, Queue: QueueConfig{Buffer: 100_000, TrimAt: 100, Trim: true, TrimTo: cut, LastHop: lastHop}})
			small, _ := dataPacket(t, encap, usid(1), 0, wire.DefaultDSCP.Data)
			if v := s.Enqueue(10, 1, 0, 9, small, 200); v.Drop != DropNone || !v.Trimmed || v.WireLen != 200 || v.Len != len(small) ||
				wire.OuterTrafficClass(small)>>2 != want {
				t.Errorf("lastHop %v encap %v: a 200-byte packet past the threshold: %+v, DSCP %d, want redirected whole with DSCP %d",
					lastHop, encap, v, wire.OuterTrafficClass(small)>>2, want)
			}
		}
	}
}
