package roce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// pair is two endpoints with one connected QP each, driven by hand: A has
// posted a three-packet WRITE and a WRITE_IMM into B's memory; B has a
// receive posted. Packets are captured, not delivered.
type pair struct {
	a, b     *Endpoint
	qa, qb   *QP
	mem      []byte // B's registered memory, with guard bytes around it
	dstMR    verbs.MR
	data     [][]byte // A's data packets: FIRST, MIDDLE, LAST, ONLY_IMM
	ctrl     [][]byte // B's answers: an ACK, a NAK and a CNP
	buf      []byte
	startPSN psn.PSN
}

const pairMTU = 1024

func newPair(t testing.TB) *pair { return newPairICRC(t, false) }

// newPairICRC is newPair with endpoints that skip checksum verification
// when skip is set, so that a fuzzer's mutations reach the transport.
func newPairICRC(t testing.TB, skip bool) *pair {
	t.Helper()
	x := &pair{buf: make([]byte, MaxHeaderLen+pairMTU+8), startPSN: 0xFFFFFE}
	var err error
	mk := func(h int) *Endpoint {
		ep, err := NewEndpoint(Config{Ports: []netip.Addr{hostAddr(h)}, MTU: pairMTU, Seed: 9, SkipICRC: skip})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	x.a, x.b = mk(0), mk(1)
	x.qa, _ = x.a.CreateQP()
	x.qb, _ = x.b.CreateQP()
	if err = x.qa.Connect(0, ConnectAttr{Remote: hostAddr(1), RemoteQPN: x.qb.QPN(), SendPSN: uint32(x.startPSN), RecvPSN: 7}); err != nil {
		t.Fatal(err)
	}
	if err = x.qb.Connect(0, ConnectAttr{Remote: hostAddr(0), RemoteQPN: x.qa.QPN(), SendPSN: 7, RecvPSN: uint32(x.startPSN)}); err != nil {
		t.Fatal(err)
	}
	x.mem = bytes.Repeat([]byte{0xA5}, 8192+2*guard)
	if x.dstMR, err = x.b.RegisterMemory(x.mem[guard : guard+8192]); err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 8192)
	for i := range src {
		src[i] = byte(i * 7)
	}
	srcMR, _ := x.a.RegisterMemory(src)
	x.qa.PostWrite(0, verbs.WriteRequest{ID: 1, Local: srcMR, Remote: x.dstMR, Length: 2*pairMTU + 100})
	x.qa.PostWrite(0, verbs.WriteRequest{ID: 2, Local: srcMR, Remote: x.dstMR, RemoteOffset: 4096, Length: 300, WithImm: true, Imm: 0x1234})
	x.qb.PostRecv(77)
	for now := mtime.Time(0); len(x.data) < 4; now += 100 {
		if tx, ok := x.a.PollTransmit(now, 1, x.buf); ok {
			x.data = append(x.data, append([]byte(nil), x.buf[:tx.Len]...))
		}
	}
	return x
}

// captureCtrl fills x.ctrl with a CNP, a NAK and an ACK from a second pair,
// so that x itself stays in its initial state.
func (x *pair) captureCtrl(t testing.TB) {
	y := newPair(t)
	poll := func(now mtime.Time) {
		for {
			tx, ok := y.b.PollTransmit(now, 1, y.buf)
			if !ok {
				return
			}
			x.ctrl = append(x.ctrl, append([]byte(nil), y.buf[:tx.Len]...))
		}
	}
	ce := append([]byte(nil), y.data[0]...)
	wire.MarkCE(ce)
	y.b.HandleDatagram(0, 0, ce, len(ce)) // accepted, CE: a CNP
	poll(0)
	y.b.HandleDatagram(1, 0, y.data[2], len(y.data[2])) // ahead: a NAK
	poll(1)
	y.b.HandleDatagram(2, 0, y.data[1], len(y.data[1])) // accepted
	y.b.HandleDatagram(3, 0, y.data[2], len(y.data[2])) // accepted, ACK requested
	poll(3)
	if len(x.ctrl) != 3 {
		t.Fatalf("captured %d control packets", len(x.ctrl))
	}
}

// forge decodes pkt, lets edit change it (its Payload is a copy) and
// re-encodes it with valid
// checksums, so that only the edited field is wrong.
func forge(t testing.TB, pkt []byte, edit func(p *Packet)) []byte {
	t.Helper()
	var p Packet
	if err := p.Decode(pkt); err != nil {
		t.Fatal(err)
	}
	p.Payload = append([]byte(nil), p.Payload...)
	edit(&p) // an edit that changes the payload sets PayloadLen too
	return AppendPacket(nil, &p, p.Payload)
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x40
	return c
}

// TestHostilePackets delivers forged packets to B and checks that each is
// dropped for its reason, leaves memory alone, and answers with a NAK
// only where RC says so.
func TestHostilePackets(t *testing.T) {
	base := newPair(t)
	first, middle, only := base.data[0], base.data[1], base.data[3]
	badICRC := func() []byte {
		b := flip(first, len(first)-50)
		binary.BigEndian.PutUint16(b[wire.IPv6Len+6:], 0)
		var ip wire.IPv6
		ip.Decode(b)
		binary.BigEndian.PutUint16(b[wire.IPv6Len+6:], wire.UDPChecksum(ip.Src, ip.Dst, b[wire.IPv6Len:]))
		return b
	}
	phantom := forge(t, first, func(p *Packet) { p.Payload = nil }) // headers only, true lengths
	notUDP := append([]byte(nil), first...)
	notUDP[6] = wire.ProtoRouting // IPv6 next header
	cases := []struct {
		name    string
		pkt     []byte
		wireLen int // 0: len(pkt)
		port    int
		want    verbs.DropReason
		nak     uint8 // syndrome of the NAK B must send, or 0
	}{
		{name: "truncated", pkt: first[:30], want: verbs.DropMalformed},
		{name: "garbage", pkt: []byte("Not a RoCE packet (IP version 4), but long enough to parse a header or two"), want: verbs.DropMalformed},
		{name: "headers only", pkt: first[:wire.IPv6Len+wire.UDPLen+wire.BTHLen+4], want: verbs.DropMalformed},
		{name: "bit flip", pkt: flip(first, len(first)-50), want: verbs.DropBadChecksum},
		{name: "bad ICRC", pkt: badICRC(), want: verbs.DropBadICRC},
		{name: "no such port", pkt: first, port: 3, want: verbs.DropQPState},
		{name: "not UDP", pkt: notUDP, want: verbs.DropNotMRC},
		{name: "UDP port", pkt: forge(t, first, func(p *Packet) { p.UDP.DstPort = 4792 }), want: verbs.DropNotMRC},
		{name: "SEND opcode", pkt: forge(t, middle, func(p *Packet) { p.BTH.Opcode = 0x04 }), want: verbs.DropNotMRC},
		{name: "other host", pkt: forge(t, first, func(p *Packet) { p.IP.Dst[15] = 9 }), want: verbs.DropNotMRC},
		{name: "P_Key", pkt: forge(t, first, func(p *Packet) { p.BTH.PKey = 0x8001 }), want: verbs.DropNotMRC},
		{name: "wrong QPN", pkt: forge(t, first, func(p *Packet) { p.BTH.DestQP = 0x7777 }), want: verbs.DropUnknownQP},
		{name: "wrong source", pkt: forge(t, first, func(p *Packet) { p.IP.Src[15] ^= 0x40 }), want: verbs.DropBadSource},
		{name: "PSN ahead", pkt: forge(t, first, func(p *Packet) { p.BTH.PSN = (p.BTH.PSN + 5) & wire.PSNMask }), want: verbs.DropOutOfWindow, nak: 0x60},
		{name: "bad R_Key", pkt: forge(t, first, func(p *Packet) { p.RETH.RKey ^= 0x100 }), want: verbs.DropBadRKey, nak: 0x62},
		{name: "stale key tag", pkt: forge(t, first, func(p *Packet) { p.RETH.RKey ^= 0x01 }), want: verbs.DropBadRKey, nak: 0x62},
		{name: "VA below", pkt: forge(t, first, func(p *Packet) { p.RETH.VA -= 1 }), want: verbs.DropBounds, nak: 0x62},
		{name: "length beyond", pkt: forge(t, first, func(p *Packet) { p.RETH.DMALen = 8193 }), want: verbs.DropBounds, nak: 0x62},
		{name: "VA overflow", pkt: forge(t, first, func(p *Packet) { p.RETH.VA = 1<<64 - 100 }), want: verbs.DropBounds, nak: 0x62},
		{name: "MIDDLE first", pkt: forge(t, middle, func(p *Packet) { p.BTH.PSN = uint32(base.startPSN) }), want: verbs.DropMalformed, nak: 0x61},
		{name: "FIRST short", pkt: forge(t, first, func(p *Packet) { p.Payload, p.PayloadLen = p.Payload[:100], 100 }), want: verbs.DropMalformed, nak: 0x61},
		{name: "FIRST of one MTU", pkt: forge(t, first, func(p *Packet) { p.RETH.DMALen = pairMTU }), want: verbs.DropMalformed, nak: 0x61},
		{name: "ONLY length", pkt: forge(t, only, func(p *Packet) { p.BTH.PSN = uint32(base.startPSN); p.RETH.DMALen = 299 }), want: verbs.DropMalformed, nak: 0x61},
		{name: "phantom into memory", pkt: phantom, wireLen: len(first), want: verbs.DropPhantom},
		{name: "phantom length", pkt: middle[:60], wireLen: len(middle) + 1, want: verbs.DropMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newPair(t)
			before := append([]byte(nil), x.mem...)
			wl := tc.wireLen
			if wl == 0 {
				wl = len(tc.pkt)
			}
			x.b.HandleDatagram(10, tc.port, tc.pkt, wl)
			s := x.b.Stats()
			if s.Drops[tc.want] != 1 || s.Dropped() != 1 {
				t.Fatalf("drops %v, want one %v", s.Drops, tc.want)
			}
			if !bytes.Equal(before, x.mem) {
				t.Fatal("memory changed")
			}
			if s.DataReceived != 0 || x.qb.rsp.epsn != x.startPSN {
				t.Fatalf("accepted: %d packets, expected PSN now %#x", s.DataReceived, x.qb.rsp.epsn)
			}
			var naks []uint8
			for {
				tx, ok := x.b.PollTransmit(11, 1, x.buf)
				if !ok {
					break
				}
				var p Packet
				if err := p.Decode(x.buf[:tx.Len]); err != nil {
					t.Fatal(err)
				}
				if tx.Kind == KindNAK {
					naks = append(naks, p.AETH.Syndrome)
					if psn.PSN(p.BTH.PSN) != x.startPSN {
						t.Fatalf("NAK of PSN %#x", p.BTH.PSN)
					}
				}
			}
			switch {
			case tc.nak == 0 && len(naks) != 0:
				t.Fatalf("NAKs %x", naks)
			case tc.nak != 0 && (len(naks) != 1 || naks[0] != tc.nak):
				t.Fatalf("NAKs %x, want %#x", naks, tc.nak)
			}
			// The genuine packets still go through afterwards (a fatal
			// NAK aside, which the requester acts on).
			for i, p := range x.data {
				x.b.HandleDatagram(mtime.Time(20+i), 0, p, len(p))
			}
			if got := x.b.Stats().DataReceived; got != 4 {
				t.Fatalf("%d genuine packets accepted after the forgery, want 4", got)
			}
		})
	}
}

// TestHostileAcks feeds A acknowledgements it cannot have earned.
func TestHostileAcks(t *testing.T) {
	x := newPair(t)
	x.captureCtrl(t)
	ack := x.ctrl[2] // an ACK of the whole first WRITE
	for _, tc := range []struct {
		name string
		pkt  []byte
		want verbs.DropReason
	}{
		{"ACK of unsent PSNs", forge(t, ack, func(p *Packet) { p.BTH.PSN = (p.BTH.PSN + 1000) & wire.PSNMask }), verbs.DropStale},
		{"NAK of unsent PSN", forge(t, ack, func(p *Packet) { p.AETH.Syndrome = 0x62; p.BTH.PSN = (p.BTH.PSN + 9) & wire.PSNMask }), verbs.DropStale},
		{"NAK before una", forge(t, ack, func(p *Packet) { p.AETH.Syndrome = 0x60; p.BTH.PSN = (p.BTH.PSN - 100) & wire.PSNMask }), verbs.DropStale},
		{"reserved syndrome", forge(t, ack, func(p *Packet) { p.AETH.Syndrome = 0x41 }), verbs.DropMalformed},
		{"CNP with payload", forge(t, x.ctrl[0], func(p *Packet) { p.Payload, p.PayloadLen = []byte{1, 2, 3, 4}, 4 }), verbs.DropMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := newPair(t)
			y.a.HandleDatagram(10, 0, tc.pkt, len(tc.pkt))
			s := y.a.Stats()
			if s.Drops[tc.want] != 1 || s.Dropped() != 1 || y.qa.State() != verbs.StateRTS || s.WritesDone != 0 {
				t.Fatalf("drops %v, state %v, %d writes done", s.Drops, y.qa.State(), s.WritesDone)
			}
		})
	}
	// The genuine ACK completes the first WRITE, once.
	x.a.HandleDatagram(10, 0, ack, len(ack))
	x.a.HandleDatagram(11, 0, ack, len(ack))
	if s := x.a.Stats(); s.WritesDone != 1 || s.Drops[verbs.DropStale] != 0 {
		t.Fatalf("%d writes done, %d stale", s.WritesDone, s.Drops[verbs.DropStale])
	}
}

// TestRemoteAccessError posts a WRITE to a key the peer never registered:
// the peer NAKs it and the requester's QP fails with ErrRemoteAccess.
func TestRemoteAccessError(t *testing.T) {
	x := newTransfer(t, tnetConfig{Seed: 3}, ConnectAttr{}, 1<<16)
	bogus := x.dstMR
	bogus.Key ^= 0x55
	if err := x.qa.PostWrite(0, verbs.WriteRequest{ID: 9, Local: x.srcMR, Remote: bogus, Length: 5000}); err != nil {
		t.Fatal(err)
	}
	x.net.kick(0)
	x.net.run(time.Millisecond, func() bool { return len(x.errs) > 0 })
	if len(x.errs) == 0 || !errors.Is(x.errs[0].Err, ErrRemoteAccess) || !errors.Is(x.errs[0].Err, verbs.ErrRemoteFatal) {
		t.Fatalf("events %v", x.errs)
	}
	if s := x.qb.Stats(); s.FatalNAKsSent != 1 || s.Drops[verbs.DropBadRKey] != 1 {
		t.Fatalf("responder: %d fatal NAKs, drops %v", s.FatalNAKsSent, s.Drops)
	}
}

// FuzzHandleDatagram feeds arbitrary bytes to both endpoints of a pair in
// a fixed state, as a complete datagram or a phantom one (extra > 0),
// with checksums verified or not (skip), then lets them answer and time
// out. Nothing may panic, memory outside B's region
// must not change, and B's expected PSN may advance by one at most.
func FuzzHandleDatagram(f *testing.F) {
	x := newPair(f)
	x.captureCtrl(f)
	for _, p := range append(x.data, x.ctrl...) {
		f.Add(p, uint16(0), false)
		f.Add(p, uint16(0), true)
		f.Add(p, uint16(4096), true)
	}
	f.Fuzz(func(t *testing.T, pkt []byte, extra uint16, skip bool) {
		y := newPairICRC(t, skip)
		for _, ep := range []*Endpoint{y.b, y.a} {
			ep.HandleDatagram(5, 0, pkt, len(pkt)+int(extra))
			for now := mtime.Time(6); now < 10; now++ {
				for {
					if _, ok := ep.PollTransmit(now, 1, y.buf); !ok {
						break
					}
				}
				for {
					if _, ok := ep.PollEvent(); !ok {
						break
					}
				}
			}
			ep.HandleTimeout(mtime.Time(time.Second))
		}
		for i := range guard {
			if y.mem[i] != 0xA5 || y.mem[len(y.mem)-1-i] != 0xA5 {
				t.Fatal("guard bytes changed")
			}
		}
		if d := y.qb.rsp.epsn.Sub(y.startPSN); d < 0 || d > 1 {
			t.Fatalf("expected PSN moved by %d", d)
		}
		s := y.b.Stats()
		if s.DataReceived > 1 {
			t.Fatalf("%d packets accepted", s.DataReceived)
		}
	})
}
