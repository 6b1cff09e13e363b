package mrc_test

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// capture runs a small transfer and returns the data packets A sent, for
// tests that replay and forge them.
func capture(t testing.TB) (*transfer, [][]byte) {
	x := newTransfer(t, testnet.Config{Seed: 3, Planes: 2, MTU: 1024}, mrc.EVProfile{}, mrc.RTSAttr{}, 8192)
	var pkts [][]byte
	x.net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
		if from == testnet.A && tx.Kind == verbs.KindData {
			pkts = append(pkts, append([]byte(nil), pkt...))
		}
	}
	x.postAll(2)
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatal("transfer unfinished")
	}
	x.check()
	return x, pkts
}

// TestHostilePackets forges packets from a captured one and checks that
// each is dropped for the right reason without touching memory.
func TestHostilePackets(t *testing.T) {
	x, pkts := capture(t)
	epB := x.net.Endpoint(testnet.B)
	orig := pkts[0]
	// forge decodes the original, gives it a PSN not yet received, lets
	// edit change it, and re-encodes it with valid checksums, so that only
	// the edited field is wrong.
	forge := func(edit func(p *wire.Packet)) []byte {
		var p wire.Packet
		if err := p.Decode(orig); err != nil {
			t.Fatal(err)
		}
		payload := append([]byte(nil), p.Payload...)
		p.BTH.PSN += uint32(len(pkts))
		edit(&p)
		return wire.AppendPacket(nil, &p, payload)
	}
	// badICRC corrupts a payload byte and fixes the UDP checksum, so that
	// only the ICRC can tell.
	badICRC := func() []byte {
		b := flip(orig, len(orig)-100)
		udp := b[wire.IPv6Len:]
		udp[6], udp[7] = 0, 0
		var ip wire.IPv6
		ip.Decode(b)
		c := wire.UDPChecksum(ip.Src, ip.Dst, udp)
		udp[6], udp[7] = byte(c>>8), byte(c)
		return b
	}
	mr := x.dstMR
	cases := []struct {
		name string
		pkt  []byte
		want verbs.DropReason
	}{
		{"truncated", orig[:30], verbs.DropMalformed},
		{"garbage", []byte("definitely not an MRC packet, but long enough to parse a header"), verbs.DropMalformed},
		{"bit flip", flip(orig, len(orig)-100), verbs.DropBadChecksum},
		{"bad ICRC", badICRC(), verbs.DropBadICRC},
		{"checksum", flip(orig, wire.IPv6Len+6), verbs.DropBadChecksum},
		{"wrong QPN", forge(func(p *wire.Packet) { p.BTH.DestQP = 0x7777 }), verbs.DropUnknownQP},
		{"wrong source", forge(func(p *wire.Packet) { p.IP.Src[15] ^= 0x40 }), verbs.DropBadSource},
		{"PSN beyond window", forge(func(p *wire.Packet) { p.BTH.PSN = (p.BTH.PSN + 1<<20) & wire.PSNMask }), verbs.DropOutOfWindow},
		{"bad R_Key", forge(func(p *wire.Packet) { p.RETH.RKey ^= 0x10 }), verbs.DropBadRKey},
		{"stale key tag", forge(func(p *wire.Packet) { p.RETH.RKey ^= 0x01 }), verbs.DropBadRKey},
		{"VA below region", forge(func(p *wire.Packet) { p.RETH.VA = mr.Addr - 1 }), verbs.DropBounds},
		{"VA past region", forge(func(p *wire.Packet) { p.RETH.VA = mr.Addr + mr.Len - 100 }), verbs.DropBounds},
		{"VA wraps", forge(func(p *wire.Packet) { p.RETH.VA = ^uint64(0) - 10 }), verbs.DropBounds},
		{"wrong port", forge(func(p *wire.Packet) { p.UDP.DstPort = 4792 }), verbs.DropNotMRC},
		{"wrong P_Key", forge(func(p *wire.Packet) { p.BTH.PKey = 0x1234 }), verbs.DropBadPKey},
		{"unknown opcode", forge(func(p *wire.Packet) { p.BTH.Opcode = 0x04 }), verbs.DropMalformed},
	}
	before := append([]byte(nil), x.dst...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s0 := epB.Stats()
			epB.HandleDatagram(x.net.Now(), 0, c.pkt, len(c.pkt))
			s1 := epB.Stats()
			if got := s1.Drops[c.want] - s0.Drops[c.want]; got != 1 {
				t.Fatalf("drops[%v] rose by %d, want 1 (all drops %v -> %v)", c.want, got, s0.Drops, s1.Drops)
			}
			if s1.Dropped()-s0.Dropped() != 1 {
				t.Fatalf("more than one drop counted: %v -> %v", s0.Drops, s1.Drops)
			}
			if s1.DataReceived != s0.DataReceived {
				t.Fatal("a hostile packet was accepted")
			}
		})
	}
	if string(before) != string(x.dst) {
		t.Fatal("hostile packets changed memory")
	}
	// A replayed genuine packet is a duplicate, not a new arrival.
	s0 := epB.Stats()
	epB.HandleDatagram(x.net.Now(), 0, orig, len(orig))
	if s1 := epB.Stats(); s1.Duplicates != s0.Duplicates+1 || s1.DataReceived != s0.DataReceived {
		t.Fatalf("replay: duplicates %d -> %d", s0.Duplicates, s1.Duplicates)
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x20
	return c
}

// FuzzHandleDatagram feeds arbitrary bytes, and mutations of genuine
// packets, to an endpoint whose QP is in RTS. It must never panic, never
// write outside its memory region, and count every packet it rejects.
func FuzzHandleDatagram(f *testing.F) {
	_, pkts := capture(f)
	for _, p := range pkts {
		f.Add(p, uint8(0))
	}
	f.Add([]byte{0x60}, uint8(1))
	addAETHSeeds(f, pkts)
	addEVProbeSeeds(f, pkts)
	// One endpoint pair serves every input, so state left by one input
	// meets the next: more hostile, and cheap enough to fuzz fast.
	x := newTransfer(f, testnet.Config{Seed: 3, Planes: 2, MTU: 1024}, mrc.EVProfile{}, mrc.RTSAttr{}, 8192)
	epB := x.net.Endpoint(testnet.B)
	buf := make([]byte, mrc.MaxHeaderLen+1024+16)
	f.Fuzz(func(t *testing.T, pkt []byte, port uint8) {
		s0 := epB.Stats()
		epB.HandleDatagram(0, int(port%3), pkt, len(pkt))
		s1 := epB.Stats()
		if s1.Dropped() == s0.Dropped() && s1.DataReceived == s0.DataReceived &&
			s1.Duplicates == s0.Duplicates && s1.TrimmedReceived == s0.TrimmedReceived &&
			s1.SACKsReceived == s0.SACKsReceived && s1.NACKsReceived == s0.NACKsReceived &&
			s1.ProtNAKsRecv == s0.ProtNAKsRecv && s1.AnswersWithheld == s0.AnswersWithheld {
			// Probes and endpoint operations are answered, not counted.
			var p wire.Packet
			if err := p.Decode(pkt); err != nil || (p.BTH.Opcode != wire.OpProbe && p.BTH.DestQP != wire.QPNEndpoint) {
				t.Fatalf("packet neither accepted nor counted as a drop: % x", pkt)
			}
		}
		for i := range guard {
			if x.dst[i] != 0xA5 || x.dst[len(x.dst)-1-i] != 0xA5 {
				t.Fatal("write outside the memory region")
			}
		}
		// The endpoint must still be able to send what it owes.
		for range 64 {
			if _, ok := epB.PollTransmit(0, verbs.AllPorts, buf); !ok {
				break
			}
		}
	})
}

// addAETHSeeds adds RoCE NAKs (AETH), one per syndrome kind, made from the
// captured SACKs: the parse paths of protection errors.
func addAETHSeeds(f *testing.F, pkts [][]byte) {
	for _, b := range pkts {
		var p wire.Packet
		if p.Decode(b) != nil || p.BTH.Opcode != wire.OpSACK {
			continue
		}
		for _, syn := range []uint8{wire.AETHAck, wire.AETHNakPSNSeqError, wire.AETHNakInvalidRequest, wire.AETHNakRemoteAccess, wire.AETHNakRemoteOperation} {
			p.BTH.Opcode, p.AETH = wire.OpAck, wire.AETH{Syndrome: syn, MSN: 1}
			f.Add(wire.AppendPacket(nil, &p, nil), uint8(0))
		}
		return
	}
}

// addEVProbeSeeds adds EV_PROBE endpoint requests and responses (and a
// PORT_STATUS response) made from a captured SACK: the parse paths of EV
// probes and their answers.
func addEVProbeSeeds(f *testing.F, pkts [][]byte) {
	for _, b := range pkts {
		var p wire.Packet
		if p.Decode(b) != nil || p.BTH.Opcode != wire.OpSACK {
			continue
		}
		p.BTH.DestQP = wire.QPNEndpoint
		p.BTH.Opcode = wire.OpEndpointRequest
		p.EPReq = wire.EPRequest{Op: wire.EPEVProbe, TS: wire.TSETH{TxTimestamp: 7, FType: wire.TSETHFType}}
		f.Add(wire.AppendPacket(nil, &p, nil), uint8(0))
		p.BTH.Opcode = wire.OpEndpointResponse
		for _, op := range []wire.EndpointOp{wire.EPEVProbe, wire.EPPortStatusUpdate} {
			p.EPResp = wire.EPResponse{Op: op, PortStatusMask: uint32(p.EV()), TxTimestamp: 7}
			f.Add(wire.AppendPacket(nil, &p, nil), uint8(0))
		}
		addProbeAnswerSeeds(f, b)
		return
	}
}

// addProbeAnswerSeeds adds, from captured SACK b, probe answers (pr=1)
// naming PSNs around its cumulative point, and resource NACKs
// (PSN_OOR_WINDOW, NO_RESOURCE): the parse paths of suspect probes and of
// the requester's back-off.
func addProbeAnswerSeeds(f *testing.F, b []byte) {
	var p wire.Packet
	if p.Decode(b) != nil {
		return
	}
	for _, off := range []int16{-1, 0, 1, 64, -200} {
		p.SACK.PR, p.SACK.AckPSNOffset = true, off
		f.Add(wire.AppendPacket(nil, &p, nil), uint8(0))
	}
	p.BTH.Opcode = wire.OpNACK
	for _, why := range []wire.NackReason{wire.NackPSNOORWindow, wire.NackNoResource, wire.NackNoBitmap} {
		p.NACK = wire.NACK{Reason: why, Entropy: p.SACK.Entropy, NackPSN: p.SACK.CackPSN, CCType: wire.NACKDefaultCCType}
		f.Add(wire.AppendPacket(nil, &p, nil), uint8(0))
	}
}

// FuzzHandleDatagramRealMemory feeds arbitrary bytes, mutations of genuine
// packets and wrong wire lengths to an endpoint that has only real
// memory. Besides FuzzHandleDatagram's checks: a datagram whose wire
// length differs from its bytes is never taken as a phantom payload, it is
// dropped as malformed; and nothing the endpoint accepts changes the
// memory outside what a genuine packet would write.
func FuzzHandleDatagramRealMemory(f *testing.F) {
	_, pkts := capture(f)
	for _, p := range pkts {
		f.Add(p, uint8(0), uint16(0))
		f.Add(p, uint8(1), uint16(100))
		if len(p) > spectrumCut {
			// Cut as a fixed-size trim leaves it (spec-gaps.md #22).
			c := append([]byte(nil), p[:spectrumCut]...)
			wire.SetOuterDSCP(c, wire.DefaultDSCP.TrimmedLastHop)
			f.Add(c, uint8(0), uint16(0))
		}
	}
	x := newTransfer(f, testnet.Config{Seed: 3, Planes: 2, MTU: 1024}, mrc.EVProfile{}, mrc.RTSAttr{}, 8192)
	epB := x.net.Endpoint(testnet.B)
	buf := make([]byte, mrc.MaxHeaderLen+1024+16)
	f.Fuzz(func(t *testing.T, pkt []byte, port uint8, extra uint16) {
		wireLen := len(pkt) + int(extra)
		s0 := epB.Stats()
		epB.HandleDatagram(0, int(port%3), pkt, wireLen)
		s1 := epB.Stats()
		if extra != 0 {
			if s1.Drops[verbs.DropMalformed]+s1.Drops[verbs.DropQPState] == s0.Drops[verbs.DropMalformed]+s0.Drops[verbs.DropQPState] ||
				s1.DataReceived != s0.DataReceived || s1.TrimmedReceived != s0.TrimmedReceived {
				t.Fatalf("a datagram %d bytes short of its wire length was not dropped as malformed: % x", extra, pkt)
			}
		}
		if s1.Dropped() == s0.Dropped() && s1.DataReceived == s0.DataReceived &&
			s1.Duplicates == s0.Duplicates && s1.TrimmedReceived == s0.TrimmedReceived &&
			s1.SACKsReceived == s0.SACKsReceived && s1.NACKsReceived == s0.NACKsReceived &&
			s1.AnswersWithheld == s0.AnswersWithheld {
			var p wire.Packet
			if err := p.Decode(pkt); err != nil || (p.BTH.Opcode != wire.OpProbe && p.BTH.DestQP != wire.QPNEndpoint) {
				t.Fatalf("packet neither accepted nor counted as a drop: % x", pkt)
			}
		}
		for i := range guard {
			if x.dst[i] != 0xA5 || x.dst[len(x.dst)-1-i] != 0xA5 {
				t.Fatal("write outside the memory region")
			}
		}
		for range 64 {
			if _, ok := epB.PollTransmit(0, verbs.AllPorts, buf); !ok {
				break
			}
		}
	})
}

// TestVerbErrors checks that every invalid verb returns a clear error.
func TestVerbErrors(t *testing.T) {
	ep, err := mrc.NewEndpoint(mrc.Config{Ports: []netip.Addr{netip.MustParseAddr("fd00::1")}})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := ep.CreateQP()
	mr, _ := ep.RegisterMemory(make([]byte, 4096), verbs.AccessLocal)
	remote := verbs.MR{Key: 7, Addr: 1 << 32, Len: 4096}
	wr := verbs.WriteRequest{Local: mr, Remote: remote, Length: 100}
	if err := q.PostWrite(0, wr); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("PostWrite in RESET: %v", err)
	}
	if err := q.ReadyToSend(0, mrc.RTSAttr{}); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("RESET -> RTS: %v", err)
	}
	if err := q.Init(0, mrc.InitAttr{EVs: mrc.EVProfile{PathsPerPlane: 5000}}); !errors.Is(err, verbs.ErrInvalidAttr) {
		t.Fatalf("5000 paths per plane: %v", err)
	}
	if err := q.Init(0, mrc.InitAttr{}); err != nil {
		t.Fatal(err)
	}
	peer := []netip.Addr{netip.MustParseAddr("fd00::2")}
	for _, a := range []mrc.RTRAttr{
		{RemoteQPN: 0x300, Remote: nil},
		{RemoteQPN: 2, Remote: peer},
		{RemoteQPN: 0x300, Remote: peer, MPRDest: 256},
		{RemoteQPN: 0x300, Remote: []netip.Addr{netip.MustParseAddr("10.0.0.1")}},
	} {
		if err := q.ReadyToReceive(0, a); !errors.Is(err, verbs.ErrInvalidAttr) {
			t.Fatalf("RTR %+v: %v", a, err)
		}
	}
	if err := q.ReadyToReceive(0, mrc.RTRAttr{RemoteQPN: 0x300, Remote: peer}); err != nil {
		t.Fatal(err)
	}
	if err := q.ReadyToSend(0, mrc.RTSAttr{TimeoutExp: 30}); !errors.Is(err, verbs.ErrInvalidAttr) {
		t.Fatalf("timeout 30: %v", err)
	}
	if err := q.ReadyToSend(0, mrc.RTSAttr{}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		wr   verbs.WriteRequest
		want error
	}{
		"unknown local key":  {verbs.WriteRequest{Local: verbs.MR{Key: 99}, Remote: remote, Length: 1}, verbs.ErrBadMR},
		"local past the end": {verbs.WriteRequest{Local: mr, LocalOffset: 4000, Remote: remote, Length: 200}, verbs.ErrLocalBounds},
		"remote past end":    {verbs.WriteRequest{Local: mr, Remote: remote, RemoteOffset: 4095, Length: 2}, verbs.ErrRemoteBounds},
		"remote offset wrap": {verbs.WriteRequest{Local: mr, Remote: remote, RemoteOffset: ^uint64(0), Length: 2}, verbs.ErrRemoteBounds},
		"too long":           {verbs.WriteRequest{Local: mr, Remote: remote, Length: 1 << 31}, verbs.ErrInvalidAttr},
	} {
		if err := q.PostWrite(0, c.wr); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
	if err := q.PostWrite(0, wr); err != nil {
		t.Fatalf("valid WRITE: %v", err)
	}
	q.SetError(0)
	if err := q.PostWrite(0, wr); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("PostWrite in ERROR: %v", err)
	}
	var flushed bool
	pending, polled := ep.PendingEvents(), 0
	for ev, ok := ep.PollEvent(); ok; ev, ok = ep.PollEvent() {
		flushed = flushed || ev.Kind == verbs.EventWriteDone && errors.Is(ev.Err, verbs.ErrFlushed)
		polled++
	}
	if pending != polled || ep.PendingEvents() != 0 {
		t.Fatalf("PendingEvents said %d before polling, %d after; PollEvent returned %d", pending, ep.PendingEvents(), polled)
	}
	if !flushed {
		t.Fatal("the posted WRITE was not flushed when the QP entered ERROR")
	}
	if _, err := mrc.NewEndpoint(mrc.Config{}); !errors.Is(err, verbs.ErrInvalidAttr) {
		t.Fatalf("no ports: %v", err)
	}
}

// TestAllPathsDead cuts every path mid-transfer: the QP must give up with
// ErrNoPath once its retry budget runs out, and not before the budget's
// duration; retransmissions stay bounded meanwhile.
func TestAllPathsDead(t *testing.T) {
	const paths = 8
	x := newTransfer(t, testnet.Config{Seed: 5, Planes: 2}, mrc.EVProfile{PathsPerPlane: paths, ActivePerPlane: 4},
		mrc.RTSAttr{TimeoutExp: 6, RetryLinear: 2, RetryExp: 3}, 4<<20)
	x.postAll(4)
	x.net.RunUntil(mtime.Time(20*time.Microsecond), func() bool { return false })
	cut := x.net.Now()
	for p := range 2 {
		for i := range paths {
			x.net.KillPath(testnet.Path{Plane: p, Index: i})
		}
	}
	x.net.RunUntil(mtime.Time(10*time.Second), func() bool { return len(x.errs) > 0 })
	if len(x.errs) == 0 || !errors.Is(x.qa.Err(), verbs.ErrNoPath) {
		t.Fatalf("QP state %v err %v after every path died", x.qa.State(), x.qa.Err())
	}
	// Timeout 6 is 65.5 µs: 2 linear retries, then 3 doubling ones
	// (2×, 4×, 8×) before the 6th expiry gives up: ≥ 2+2+4+8+16 = 32 units.
	took := x.net.Now().Sub(cut)
	if min := 32 * 65536 * time.Nanosecond; took < min {
		t.Fatalf("gave up after %v, before the retry budget of %v", took, min)
	}
	if s := x.qa.Stats(); s.Retransmits > 2000 {
		t.Fatalf("%d retransmissions while every path was dead", s.Retransmits)
	}
}

// TestPortDownRemaps takes one of A's ports down mid-transfer: the transfer
// must finish byte-exact, B must learn A's port status, and nothing may be
// sent on the dead port afterwards.
func TestPortDownRemaps(t *testing.T) {
	x := newTransfer(t, testnet.Config{Seed: 9, Planes: 4}, mrc.EVProfile{}, mrc.RTSAttr{}, 8<<20)
	var sentOnDead, peerEvents int
	down := false
	x.net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, _ []byte) {
		if down && tx.Port == 2 {
			sentOnDead++
		}
	}
	onEvent := x.net.OnEvent
	x.net.OnEvent = func(s testnet.Side, ev verbs.Event) {
		if s == testnet.B && ev.Kind == verbs.EventPeerPorts && ev.PortsUp == 0b1011 {
			peerEvents++
		}
		onEvent(s, ev)
	}
	x.postAll(8)
	x.net.RunUntil(mtime.Time(30*time.Microsecond), func() bool { return false })
	x.net.SetPortUp(testnet.A, 2, false)
	down = true
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatal("transfer unfinished")
	}
	x.check()
	if sentOnDead > 0 {
		t.Fatalf("%d packets sent on the dead port", sentOnDead)
	}
	if peerEvents != 1 {
		t.Fatalf("B saw %d port status events for A's port 2 going down, want 1", peerEvents)
	}
	if s := x.qa.Stats(); s.EVRetired > 0 {
		t.Fatalf("a local port going down retired %d EVs; it should only remap", s.EVRetired)
	}
}

// TestRandomPhantom runs a transfer between phantom regions: packets keep
// their length on the wire, nothing is placed, and completions still come.
func TestPhantomTransfer(t *testing.T) {
	n, err := testnet.New(testnet.Config{Seed: 4, Planes: 2})
	if err != nil {
		t.Fatal(err)
	}
	qa, _, err := n.Connect(mrc.EVProfile{}, mrc.RTSAttr{})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := n.Endpoint(testnet.A).RegisterPhantom(1<<30, verbs.AccessLocal)
	dst, _ := n.Endpoint(testnet.B).RegisterPhantom(1<<30, verbs.AccessRemoteWrite)
	var wire, carried int
	n.Tap = func(_ mtime.Time, _ testnet.Side, tx verbs.Transmit, _ []byte) { wire += tx.WireLen; carried += tx.Len }
	done := 0
	n.OnEvent = func(_ testnet.Side, ev verbs.Event) {
		if ev.Kind == verbs.EventWriteDone && ev.Err == nil {
			done++
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 4 {
		if err := qa.PostWrite(0, verbs.WriteRequest{ID: uint64(i), Local: src, Remote: dst, RemoteOffset: uint64(r.IntN(1 << 20)), Length: 16 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	n.Kick(testnet.A)
	if !n.RunUntil(mtime.Time(time.Second), func() bool { return done == 4 }) {
		t.Fatal("phantom transfer unfinished")
	}
	if wire < 64<<20 || carried > wire/20 {
		t.Fatalf("wire bytes %d, carried %d: phantom payloads should be on the wire but not in buffers", wire, carried)
	}
}
