package mrc_test

import (
	"bytes"
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

// The tests in this file follow the rows of issue 10's table: a transfer
// from A to B runs while a forging peer, which sees every packet in clear
// text, injects packets built with package wire. Each asserts that the
// transfer completes byte-exact, that the forged packets are counted
// under their drop reason, and that no QP leaves RTS.

// attack is a transfer under attack, with the latest packets it sniffed.
type attack struct {
	*transfer
	pristine []byte         // the source bytes as they were before the attack
	data     sniffed        // the latest data packet A sent
	sack     sniffed        // the latest SACK B sent
	dataPkts int            // data packets A sent so far
	forged   [2]verbs.Stats // each endpoint's stats just before the first injection
}

type sniffed struct {
	pkt  []byte
	port int
}

func newAttack(t *testing.T, cfg testnet.Config, size int) *attack {
	t.Helper()
	x := newTransfer(t, cfg, mrc.EVProfile{}, mrc.RTSAttr{}, size)
	a := &attack{transfer: x, pristine: append([]byte(nil), x.src...)}
	x.net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
		switch {
		case from == testnet.A && tx.Kind == verbs.KindData:
			a.data = sniffed{pkt, tx.Port}
			a.dataPkts++
		case from == testnet.B && tx.Kind == verbs.KindSACK:
			a.sack = sniffed{pkt, tx.Port}
		}
	}
	return a
}

// run posts the transfer and runs it to the end. forge is called at every
// step once A has sent after data packets and B has sent a SACK; it
// injects what it likes and reports whether it will inject again.
func (a *attack) run(msgs, after int, forge func() bool) {
	a.t.Helper()
	a.postAll(msgs)
	forging, first := true, true
	ok := a.net.RunUntil(mtime.Time(time.Second), func() bool {
		if forging && a.dataPkts >= after && a.sack.pkt != nil {
			if first {
				a.forged = [2]verbs.Stats{a.net.Endpoint(testnet.A).Stats(), a.net.Endpoint(testnet.B).Stats()}
				first = false
			}
			forging = forge()
		}
		return a.finished()
	})
	if first {
		a.t.Fatal("the transfer ended before the attack began")
	}
	if !ok {
		a.t.Fatalf("transfer unfinished at %v: A %+v", a.net.Now(), a.qa.Stats())
	}
	a.verify()
}

// verify checks the outcome: the transfer is byte-exact against the
// source as it was before the attack, and both QPs are still in RTS.
func (a *attack) verify() {
	a.t.Helper()
	a.check()
	if !bytes.Equal(a.src, a.pristine) {
		a.t.Fatal("the attack changed the source buffer")
	}
	for _, q := range []*mrc.QP{a.qa, a.qb} {
		if q.State() != verbs.StateRTS {
			a.t.Fatalf("QP %d left RTS: %v (%v)", q.QPN(), q.State(), q.Err())
		}
	}
}

// drops returns how many packets side s dropped for why since the attack
// began.
func (a *attack) drops(s testnet.Side, why verbs.DropReason) uint64 {
	return a.net.Endpoint(s).Stats().Drops[why] - a.forged[s].Drops[why]
}

// inject delivers a forged packet to side s on port.
func (a *attack) inject(s testnet.Side, port int, pkt []byte) {
	a.net.Endpoint(s).HandleDatagram(a.net.Now(), port, pkt, len(pkt))
	a.net.Kick(s)
}

// decode parses a sniffed packet for editing and keeps its payload.
func decode(t testing.TB, b []byte) (*wire.Packet, []byte) {
	t.Helper()
	var p wire.Packet
	if err := p.Decode(b); err != nil {
		t.Fatal(err)
	}
	return &p, append([]byte(nil), p.Payload...)
}

// fromB turns a sniffed SACK of B's into a packet to A with header h,
// addressed as B's packets are.
func (a *attack) fromB(edit func(p *wire.Packet)) []byte {
	p, _ := decode(a.t, a.sack.pkt)
	edit(p)
	return wire.AppendPacket(nil, p, nil)
}

// Row 2: one forged NACK UNEXP_EVENT used to fail the requester at once.
// A fatal NACK now counts only if it names a PSN in flight and reflects
// one of the QP's EVs.
func TestAttackFatalNACK(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 31, Planes: 2}, 1<<20)
	a.run(4, 16, func() bool {
		for _, bad := range []struct {
			psnOff uint32  // from the sniffed cumulative ack
			evXor  wire.EV // applied to the sniffed EV
		}{
			{1 << 20, 0},              // a real EV, a PSN not in flight (the attack)
			{1, 0x0000_0100},          // the PSN after the cumulative ack, but an EV not the QP's
			{-5000 & wire.PSNMask, 0}, // long acknowledged
		} {
			a.inject(testnet.A, a.sack.port, a.fromB(func(p *wire.Packet) {
				p.BTH.Opcode = wire.OpNACK
				p.NACK = wire.NACK{Reason: wire.NackUnexpEvent, NackPSN: (p.SACK.CackPSN + bad.psnOff) & wire.PSNMask,
					Entropy: p.SACK.Entropy ^ bad.evXor, CCType: wire.NACKDefaultCCType}
			}))
		}
		return false
	})
	if d := a.drops(testnet.A, verbs.DropFatalNACK); d != 3 {
		t.Fatalf("%d forged fatal NACKs counted, want 3", d)
	}
}

// Row 3: one forged PORT_STATUS request with mask 0 used to turn off every
// plane of the QP. It is now ignored and counted, and a flood of requests
// is rate-limited.
func TestAttackPortStatusAllDown(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 32, Planes: 2}, 1<<20)
	var peerPorts int
	onEvent := a.net.OnEvent
	a.net.OnEvent = func(s testnet.Side, ev verbs.Event) {
		if ev.Kind == verbs.EventPeerPorts {
			peerPorts++
		}
		onEvent(s, ev)
	}
	const flood = 50
	request := func(mask uint32) func(p *wire.Packet) {
		return func(p *wire.Packet) {
			p.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpEndpointRequest, DestQP: wire.QPNEndpoint}
			p.PayloadLen = 0
			p.EPReq = wire.EPRequest{Op: wire.EPPortStatusUpdate, PortStatusMask: mask, TS: wire.TSETH{TxTimestamp: 7, FType: wire.TSETHFType}}
		}
	}
	a.run(4, 16, func() bool {
		// To A from B's address, and to B from A's.
		a.inject(testnet.A, a.sack.port, a.fromB(request(0)))
		p, _ := decode(t, a.data.pkt)
		request(0)(p)
		a.inject(testnet.B, a.data.port, wire.AppendPacket(nil, p, nil))
		// A flood of harmless-looking requests, all at one instant.
		for range flood {
			a.inject(testnet.A, a.sack.port, a.fromB(request(uint32(verbs.AllPorts))))
		}
		return false
	})
	if d := a.drops(testnet.B, verbs.DropPortStatus); d != 1 {
		t.Fatalf("B counted %d forged all-down requests, want 1", d)
	}
	if d := a.drops(testnet.A, verbs.DropPortStatus); d < flood+1-4 {
		t.Fatalf("A dropped %d of %d port status requests; want the all-down one and all but 4 of the flood", d, flood+1)
	}
	if peerPorts != 0 {
		t.Fatalf("%d port status events from forged requests", peerPorts)
	}
}

// Row 4: 30 WRITE_IMMs with an out-of-range RQMSN used to make B NACK
// WIMM_LIMIT to A, whose QP failed. B now drops and counts them.
func TestAttackBadRQMSN(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 33, Planes: 2}, 1<<20)
	const n = 30
	a.run(4, 16, func() bool {
		for i := range n {
			p, payload := decode(t, a.data.pkt)
			p.BTH.Opcode = wire.OpWriteOnlyImm
			p.BTH.PSN = (p.BTH.PSN + 1 + uint32(i)) & wire.PSNMask
			p.METH.RQMSN = 0x4000
			a.inject(testnet.B, a.data.port, wire.AppendPacket(nil, p, payload))
		}
		return false
	})
	if d := a.drops(testnet.B, verbs.DropWimmLimit); d != n {
		t.Fatalf("B counted %d WRITE_IMMs with a bad RQMSN, want %d", d, n)
	}
	if s := a.qb.Stats(); s.NACKsSent != 0 {
		t.Fatalf("B sent %d NACKs", s.NACKsSent)
	}
}

// Row 5: a QP of B's could WRITE, with a sniffed R_Key, into a region
// registered for another QP. Regions now belong to a protection domain and
// a QP may use only keys of its own.
func TestAttackOtherPDKey(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 34, Planes: 2}, 1<<20)
	a.run(4, 16, func() bool { return false })
	// The attacker is a legitimate peer of B's on its own QP pair, whose
	// B side has its own protection domain.
	qa2, qb2 := connectPD(t, a.net, mrc.PD{}, a.net.Endpoint(testnet.B).AllocPD())
	evil := make([]byte, 64<<10)
	for i := range evil {
		evil[i] = 0xEE
	}
	mr, err := a.net.Endpoint(testnet.A).RegisterMemory(evil, verbs.AccessLocal)
	if err != nil {
		t.Fatal(err)
	}
	a.net.OnEvent = nil // the attacker's QP may fail; ours are checked below
	for i := range 4 {
		err := qa2.PostWrite(a.net.Now(), verbs.WriteRequest{ID: uint64(i), Local: mr, Remote: a.dstMR,
			RemoteOffset: uint64(i) << 16, Length: uint64(len(evil))})
		if err != nil {
			t.Fatal(err)
		}
	}
	a.net.Kick(testnet.A)
	a.net.RunUntil(a.net.Now().Add(2*time.Millisecond), func() bool { return false })
	a.verify()
	if d := qb2.Stats().Drops[verbs.DropAccess]; d == 0 || qb2.Stats().DataReceived != 0 {
		t.Fatalf("B's attacker QP: %d WRITEs with another PD's key dropped, %d accepted", d, qb2.Stats().DataReceived)
	}
}

// connectPD brings a new QP pair between A and B to RTS, each side in the
// protection domain given.
func connectPD(t *testing.T, n *testnet.Net, pdA, pdB mrc.PD) (qa, qb *mrc.QP) {
	t.Helper()
	qs := [2]*mrc.QP{}
	pds := [2]mrc.PD{pdA, pdB}
	for s := range 2 {
		var err error
		if qs[s], err = n.Endpoint(testnet.Side(s)).CreateQP(); err != nil {
			t.Fatal(err)
		}
		if err := qs[s].Init(n.Now(), mrc.InitAttr{PD: pds[s]}); err != nil {
			t.Fatal(err)
		}
	}
	for s := range 2 {
		o := testnet.Side(1 - s)
		remote := []netip.Addr{testnet.Addr(o, 0), testnet.Addr(o, 1)}
		if err := qs[s].ReadyToReceive(n.Now(), mrc.RTRAttr{RemoteQPN: qs[o].QPN(), Remote: remote}); err != nil {
			t.Fatal(err)
		}
		if err := qs[s].ReadyToSend(n.Now(), mrc.RTSAttr{}); err != nil {
			t.Fatal(err)
		}
	}
	return qs[0], qs[1]
}

// Row 6: 256 WRITEs into A's own source buffer, one per tag guess, used to
// change what A sent. A source buffer is now local-only: even the right
// key is refused, and the other guesses name no region.
func TestAttackSourceBuffer(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 35, Planes: 2}, 1<<20)
	a.run(4, 16, func() bool {
		const tagBits = 20
		idx := a.srcMR.Key &^ (1<<tagBits - 1)
		for g := range uint32(256) {
			key := idx | (a.srcMR.Key+g)&(1<<tagBits-1) // g = 0 is the right key
			p, payload := decode(t, a.data.pkt)
			p.IP.Src, p.IP.Dst = p.IP.Dst, p.IP.Src
			p.BTH.DestQP = a.qa.QPN()
			p.BTH.PSN = 100 + g // A's receive window: B sends nothing
			p.RETH.VA, p.RETH.RKey = a.srcMR.Addr+uint64(g)*4096, key
			for i := range payload {
				payload[i] = 0xEE
			}
			a.inject(testnet.A, a.data.port, wire.AppendPacket(nil, p, payload))
		}
		return false
	})
	if d := a.drops(testnet.A, verbs.DropAccess); d != 1 {
		t.Fatalf("the right key into the source buffer: %d drops for access, want 1", d)
	}
	if d := a.drops(testnet.A, verbs.DropBadRKey); d != 255 {
		t.Fatalf("%d wrong tag guesses dropped as bad keys, want 255", d)
	}
}

// Row 7: a forged SACK up to a sniffed PSN, under 0.5% loss, used to
// acknowledge packets the responder never got. A SACK must now reflect one
// of the QP's EVs and acknowledge only PSNs sent.
func TestAttackForgedSACK(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 36, Planes: 2, Loss: 0.005}, 4<<20)
	var badEV, beyond uint64
	step := 0
	a.run(8, 16, func() bool {
		if step++; step%8 != 0 {
			return true
		}
		d, _ := decode(t, a.data.pkt)
		last := d.BTH.PSN
		a.inject(testnet.A, a.sack.port, a.fromB(func(p *wire.Packet) {
			// A blind forger: the right PSNs, an EV of its own.
			p.SACK.CackPSN, p.SACK.AckPSNOffset, p.SACK.SackBitmap = last, 0, 0
			p.SACK.Entropy = 0x0001_0001
		}))
		a.inject(testnet.A, a.sack.port, a.fromB(func(p *wire.Packet) {
			// A real EV, but a bitmap naming PSNs not yet sent.
			p.SACK.CackPSN, p.SACK.AckPSNOffset, p.SACK.SackOffset, p.SACK.SackBitmap = last, 0, 1, 1
		}))
		badEV++
		beyond++
		return true
	})
	if d := a.drops(testnet.A, verbs.DropBadEV); d != badEV {
		t.Fatalf("%d SACKs with a foreign EV dropped, want %d", d, badEV)
	}
	if d := a.drops(testnet.A, verbs.DropStale); d < beyond {
		t.Fatalf("%d SACKs acknowledging unsent PSNs dropped, want at least %d", d, beyond)
	}
}

// Row 11: trimmed headers for PSNs never sent used to be NACKed before the
// R_Key check: 118,398 NACKs. They now pass the key check first, and the
// NACKs of those that do are bounded per RTT.
func TestAttackTrimmedFlood(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 37, Planes: 2}, 1<<20)
	const n = 3000
	var nacks0 uint64
	a.run(4, 16, func() bool {
		nacks0 = a.qb.Stats().NACKsSent
		for _, badKey := range []bool{true, false} {
			for i := range n {
				p, payload := decode(t, a.data.pkt)
				p.BTH.PSN = (p.BTH.PSN + 1 + uint32(i%500)) & wire.PSNMask
				if badKey {
					p.RETH.RKey ^= 0x10
				}
				trimmed, err := wire.Trim(wire.AppendPacket(nil, p, payload), wire.DefaultDSCP.Trimmed)
				if err != nil {
					t.Fatal(err)
				}
				a.inject(testnet.B, a.data.port, trimmed)
			}
			if badKey && a.qb.Stats().NACKsSent != nacks0 {
				t.Fatalf("B NACKed trimmed headers with a bad R_Key")
			}
		}
		return false
	})
	if d := a.drops(testnet.B, verbs.DropBadRKey); d != n {
		t.Fatalf("%d trimmed headers with a bad key dropped, want %d", d, n)
	}
	s := a.qb.Stats()
	if sent := s.NACKsSent - nacks0; sent > 1024 {
		t.Fatalf("B sent %d NACKs for %d trimmed headers in one instant, want at most its window (1024)", sent, n)
	}
	if w := s.AnswersWithheld - a.forged[testnet.B].AnswersWithheld; w < n-1024 {
		t.Fatalf("%d answers withheld, want at least %d", w, n-1024)
	}
}

// Row 1, core side: every setup verb rejects out-of-range attributes with
// ErrInvalidAttr, and none panics (an EV count of -1 used to).
func TestSetupBadAttributes(t *testing.T) {
	ports := []netip.Addr{netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")}
	peer := []netip.Addr{netip.MustParseAddr("fd00::3"), netip.MustParseAddr("fd00::4")}
	newEP := func() *mrc.Endpoint {
		ep, err := mrc.NewEndpoint(mrc.Config{Ports: ports})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	other := newEP().AllocPD()
	many := make([]netip.Addr, verbs.MaxPlanes+1)
	for i := range many {
		many[i] = netip.AddrFrom16([16]byte{0xfd, 15: byte(i + 1)})
	}
	for name, cfg := range map[string]mrc.Config{
		"17 ports":     {Ports: many},
		"MTU -1":       {Ports: ports, MTU: -1},
		"MTU huge":     {Ports: ports, MTU: 1 << 30},
		"max QPs -1":   {Ports: ports, MaxQPs: -1},
		"SACK every":   {Ports: ports, SackEvery: -1},
		"base RTT":     {Ports: ports, BaseRTT: -1},
		"IPv4 port":    {Ports: []netip.Addr{netip.MustParseAddr("10.0.0.1")}},
		"encap 9":      {Ports: ports, Encap: 9},
		"link speed":   {Ports: ports, LinkBitsPerSec: -1},
		"loss timeout": {Ports: ports, LossTimeout: -1},
	} {
		if _, err := mrc.NewEndpoint(cfg); !errors.Is(err, verbs.ErrInvalidAttr) {
			t.Errorf("NewEndpoint %s: %v", name, err)
		}
	}
	for name, a := range map[string]mrc.InitAttr{
		"EVs -1":             {EVs: mrc.EVProfile{ActivePerPlane: -1}},
		"EVs huge":           {EVs: mrc.EVProfile{ActivePerPlane: 1 << 40}},
		"EVs over the table": {EVs: mrc.EVProfile{ActivePerPlane: 8192}},
		"backups huge":       {EVs: mrc.EVProfile{BackupPerPlane: 1 << 40}},
		"paths -1":           {EVs: mrc.EVProfile{PathsPerPlane: -1}},
		"paths huge":         {EVs: mrc.EVProfile{PathsPerPlane: 1 << 40}},
		"min active -1":      {EVs: mrc.EVProfile{MinActive: -1}},
		"min active huge":    {EVs: mrc.EVProfile{MinActive: 1 << 40}},
		"skip -1":            {EVs: mrc.EVProfile{Skip: -1}},
		"probe interval -1":  {EVs: mrc.EVProfile{ProbeInterval: -1}},
		"probe successes":    {EVs: mrc.EVProfile{ProbeSuccesses: -1}},
		"another's PD":       {PD: other},
	} {
		q, err := newEP().CreateQP()
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Init(0, a); !errors.Is(err, verbs.ErrInvalidAttr) {
			t.Errorf("Init %s: %v", name, err)
		}
	}
	for name, a := range map[string]mrc.RTRAttr{
		"QPN huge":       {RemoteQPN: 1 << 30, Remote: peer},
		"one address":    {RemoteQPN: 0x300, Remote: peer[:1]},
		"PSN 25 bits":    {RemoteQPN: 0x300, Remote: peer, RecvPSN: 1 << 24},
		"MPR -1":         {RemoteQPN: 0x300, Remote: peer, MPRDest: -1},
		"max WIMM -1":    {RemoteQPN: 0x300, Remote: peer, MaxWimmDest: -1},
		"max WIMM huge":  {RemoteQPN: 0x300, Remote: peer, MaxWimmDest: 1 << 40},
		"invalid remote": {RemoteQPN: 0x300, Remote: []netip.Addr{{}, {}}},
	} {
		ep := newEP()
		q, _ := ep.CreateQP()
		if err := q.Init(0, mrc.InitAttr{}); err != nil {
			t.Fatal(err)
		}
		if err := q.ReadyToReceive(0, a); !errors.Is(err, verbs.ErrInvalidAttr) {
			t.Errorf("ReadyToReceive %s: %v", name, err)
		}
	}
	for name, a := range map[string]mrc.RTSAttr{
		"PSN 25 bits":   {SendPSN: 1 << 24},
		"MPR huge":      {MPR: 1 << 40},
		"MPR -1":        {MPR: -1},
		"max WIMM -1":   {MaxWimm: -1},
		"timeout -1":    {TimeoutExp: -1},
		"timeout 64":    {TimeoutExp: 64},
		"retries huge":  {RetryExp: 1 << 40},
		"SQ depth -1":   {SQDepth: -1},
		"SQ depth huge": {SQDepth: 1 << 40},
	} {
		ep := newEP()
		q, _ := ep.CreateQP()
		if err := q.Init(0, mrc.InitAttr{}); err != nil {
			t.Fatal(err)
		}
		if err := q.ReadyToReceive(0, mrc.RTRAttr{RemoteQPN: 0x300, Remote: peer}); err != nil {
			t.Fatal(err)
		}
		if err := q.ReadyToSend(0, a); !errors.Is(err, verbs.ErrInvalidAttr) {
			t.Errorf("ReadyToSend %s: %v", name, err)
		}
	}
	ep := newEP()
	for name, reg := range map[string]func() error{
		"empty":           func() error { _, err := ep.RegisterMemory(nil, verbs.AccessRemoteWrite); return err },
		"unknown access":  func() error { _, err := ep.RegisterMemory(make([]byte, 8), 0x80); return err },
		"another's PD":    func() error { _, err := ep.RegisterMemoryPD(other, make([]byte, 8), verbs.AccessLocal); return err },
		"phantom empty":   func() error { _, err := ep.RegisterPhantom(0, verbs.AccessLocal); return err },
		"phantom too big": func() error { _, err := ep.RegisterPhantom(1<<62, verbs.AccessLocal); return err },
	} {
		if err := reg(); !errors.Is(err, verbs.ErrInvalidAttr) {
			t.Errorf("register %s: %v", name, err)
		}
	}
}

// Issue 10 item 3, core side: nothing assumes PSN 0. A lossy, trimming
// transfer starting just before the 24-bit PSN wrap completes byte-exact.
func TestTransferAcrossPSNWrap(t *testing.T) {
	x := newTransfer(t, testnet.Config{Seed: 38, Planes: 2, StartPSN: wire.PSNMask - 40, Loss: 0.01, Trim: 0.02, Dup: 0.01},
		mrc.EVProfile{}, mrc.RTSAttr{}, 2<<20)
	x.postAll(6)
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatalf("transfer across the PSN wrap unfinished at %v", x.net.Now())
	}
	x.check()
	if s := x.qa.Stats(); s.DataSent < 100 || s.Retransmits == 0 {
		t.Fatalf("the transfer should cross the wrap and retransmit: %+v", s)
	}
}

// Row 8, core side: an endpoint with real memory takes a datagram shorter
// than its length fields say as malformed, never as a phantom payload
// whose checksum and ICRC need no check.
func TestAttackTruncated(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 39, Planes: 2}, 1<<20)
	const n = 20
	a.run(4, 16, func() bool {
		for i := range n {
			p, payload := decode(t, a.data.pkt)
			p.BTH.PSN = (p.BTH.PSN + 1 + uint32(i)) & wire.PSNMask
			for j := range payload {
				payload[j] = 0xEE
			}
			pkt := wire.AppendPacket(nil, p, payload)
			cut := pkt[:len(pkt)-100]
			a.net.Endpoint(testnet.B).HandleDatagram(a.net.Now(), a.data.port, cut, len(pkt))
		}
		return false
	})
	if d := a.drops(testnet.B, verbs.DropMalformed); d != n {
		t.Fatalf("%d truncated datagrams counted as malformed, want %d", d, n)
	}
}

// Row 11, duplicates: replays of a sniffed genuine packet asking for an
// acknowledgement are answered at most one window's worth per RTT, and a
// replay with a bad key not at all.
func TestAttackDuplicateFlood(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 40, Planes: 2}, 1<<20)
	const n = 3000
	a.run(4, 64, func() bool {
		p, payload := decode(t, a.data.pkt)
		p.BTH.PSN = (p.BTH.PSN - 32) & wire.PSNMask // received long ago
		p.BTH.AckReq = true
		bad := *p
		bad.RETH.RKey ^= 0x10
		for range n {
			a.inject(testnet.B, a.data.port, wire.AppendPacket(nil, &bad, payload))
		}
		for range n {
			a.inject(testnet.B, a.data.port, wire.AppendPacket(nil, p, payload))
		}
		return false
	})
	if d := a.drops(testnet.B, verbs.DropBadRKey); d != n {
		t.Fatalf("%d replays with a bad key dropped, want %d", d, n)
	}
	if d := a.qb.Stats().Duplicates - a.forged[testnet.B].Duplicates; d != n {
		t.Fatalf("%d duplicates, want the %d replays with the right key", d, n)
	}
	if w := a.qb.Stats().AnswersWithheld - a.forged[testnet.B].AnswersWithheld; w < n-1024 {
		t.Fatalf("%d answers to %d replays withheld, want at least %d", w, n, n-1024)
	}
}

// TestAttackSoak mixes 100,000 forged packets of every class above, a few
// per network step, into a lossy, trimming transfer: it must complete byte-exact with
// both QPs in RTS, and every forged packet must be counted somewhere.
func TestAttackSoak(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 41, Planes: 2, Loss: 0.002, Trim: 0.01}, 8<<20)
	r := rand.New(rand.NewPCG(41, 1))
	const n, perStep = 100_000, 5
	sent := 0
	toB := func(edit func(p *wire.Packet, payload []byte) []byte) {
		p, payload := decode(t, a.data.pkt)
		a.inject(testnet.B, a.data.port, edit(p, payload))
	}
	toA := func(edit func(p *wire.Packet)) { a.inject(testnet.A, a.sack.port, a.fromB(edit)) }
	classes := []func(){
		func() { // fatal NACK, PSN not in flight
			toA(func(p *wire.Packet) {
				p.BTH.Opcode = wire.OpNACK
				p.NACK = wire.NACK{Reason: wire.NackUnexpEvent, NackPSN: (p.SACK.CackPSN + 1<<20) & wire.PSNMask, Entropy: p.SACK.Entropy}
			})
		},
		func() { // port status, every port down
			toA(func(p *wire.Packet) {
				p.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpEndpointRequest, DestQP: wire.QPNEndpoint}
				p.EPReq = wire.EPRequest{Op: wire.EPPortStatusUpdate, TS: wire.TSETH{FType: wire.TSETHFType}}
			})
		},
		func() { // SACK with a foreign EV up to the latest PSN
			d, _ := decode(t, a.data.pkt)
			toA(func(p *wire.Packet) { p.SACK.CackPSN, p.SACK.SackBitmap, p.SACK.Entropy = d.BTH.PSN, 0, 1 })
		},
		func() { // WRITE_IMM with a bad RQMSN
			toB(func(p *wire.Packet, payload []byte) []byte {
				p.BTH.Opcode, p.BTH.PSN, p.METH.RQMSN = wire.OpWriteOnlyImm, (p.BTH.PSN+1)&wire.PSNMask, 0x4000
				return wire.AppendPacket(nil, p, payload)
			})
		},
		func() { // a guessed key
			toB(func(p *wire.Packet, payload []byte) []byte {
				p.BTH.PSN, p.RETH.RKey = (p.BTH.PSN+1)&wire.PSNMask, p.RETH.RKey^uint32(1+r.IntN(1<<20-1))
				return wire.AppendPacket(nil, p, payload)
			})
		},
		func() { // a trimmed header for a PSN not sent
			toB(func(p *wire.Packet, payload []byte) []byte {
				p.BTH.PSN = (p.BTH.PSN + 1 + uint32(r.IntN(256))) & wire.PSNMask
				b, _ := wire.Trim(wire.AppendPacket(nil, p, payload), wire.DefaultDSCP.Trimmed)
				return b
			})
		},
		func() { // a replay asking for a SACK
			toB(func(p *wire.Packet, payload []byte) []byte {
				p.BTH.AckReq = true
				return wire.AppendPacket(nil, p, payload)
			})
		},
		func() { // a truncated datagram claiming its full length
			p, payload := decode(t, a.data.pkt)
			b := wire.AppendPacket(nil, p, payload)
			a.net.Endpoint(testnet.B).HandleDatagram(a.net.Now(), a.data.port, b[:len(b)/2], len(b))
		},
	}
	a.run(8, 16, func() bool {
		for range perStep {
			classes[r.IntN(len(classes))]()
			sent++
		}
		return sent < n
	})
	if sent < n {
		t.Fatalf("only %d of %d forged packets went in before the transfer ended", sent, n)
	}
	var counted uint64
	for s := testnet.A; s <= testnet.B; s++ {
		st, s0 := a.net.Endpoint(s).Stats(), a.forged[s]
		counted += st.Dropped() - s0.Dropped() + st.Duplicates - s0.Duplicates + st.TrimmedReceived - s0.TrimmedReceived
		t.Logf("side %d: %d duplicates, %d trimmed headers, %d answers withheld", s, st.Duplicates-s0.Duplicates,
			st.TrimmedReceived-s0.TrimmedReceived, st.AnswersWithheld-s0.AnswersWithheld)
		for why := range verbs.DropReason(len(st.Drops)) {
			if d := st.Drops[why] - s0.Drops[why]; d > 0 {
				t.Logf("side %d: %d %v", s, d, why)
			}
		}
	}
	if counted < n {
		t.Fatalf("%d forged packets, %d counted", n, counted)
	}
}

// Row 11, probes: a flood of forged probes from the peer's address is
// answered at most once per EV of the QP per RTT.
func TestAttackProbeFlood(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 42, Planes: 2}, 1<<20)
	const n = 2000
	a.run(4, 16, func() bool {
		p, _ := decode(t, a.data.pkt)
		p.BTH.Opcode, p.PayloadLen = wire.OpProbe, 0
		p.Probe = wire.Probe{ProbeID: 9, TS: wire.TSETH{FType: wire.TSETHFType}}
		for range n {
			a.inject(testnet.B, a.data.port, wire.AppendPacket(nil, p, nil))
		}
		return false
	})
	evs := len(a.qb.EVs())
	if w := a.qb.Stats().AnswersWithheld - a.forged[testnet.B].AnswersWithheld; w < uint64(n-evs) {
		t.Fatalf("%d of %d probe answers withheld, want at least %d (the QP has %d EVs)", w, n, n-evs, evs)
	}
}
