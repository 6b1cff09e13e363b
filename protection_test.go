package mrc_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// TestPropertyBadRKey: a WRITE the responder refuses for a memory check (an
// unknown R_Key, a deregistered key, a range outside the region, a region
// closed to remote writes) ends the requester's QP in ERROR with
// ErrRemoteAccess within one RTT plus the responder's NAK interval, and no
// EV of either side changes state: a protection error is not a path
// failure. Before, the requester retired EV after EV and failed with
// ErrNoPath after its retry budget.
func TestPropertyBadRKey(t *testing.T) { forEachSeed(t, runBadRKey) }

func runBadRKey(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 4321))
	cfg := testnet.Config{Seed: seed, Planes: 1 + r.IntN(4), Encap: mrc.Encap(r.IntN(3)),
		Jitter: time.Duration(r.IntN(2)) * time.Microsecond}
	x := newTransfer(t, cfg, mrc.EVProfile{ActivePerPlane: 1 + r.IntN(16)}, mrc.RTSAttr{}, 256<<10)
	epA, epB := x.net.Endpoint(testnet.A), x.net.Endpoint(testnet.B)
	src, err := epA.RegisterMemory(x.src, verbs.AccessLocal)
	if err != nil {
		t.Fatal(err)
	}
	remote := x.dstMR
	kind := r.IntN(4)
	switch kind {
	case 0: // a key the responder never issued
		remote.Key ^= 1 + uint32(r.IntN(1<<20-1))
	case 1: // a stale key
		if err := epB.DeregisterMemory(remote.Key); err != nil {
			t.Fatal(err)
		}
	case 2: // a range beyond the region
		remote.Addr += remote.Len
	case 3: // a region closed to remote writes
		mr, err := epB.RegisterMemory(make([]byte, len(x.src)), verbs.AccessLocal)
		if err != nil {
			t.Fatal(err)
		}
		remote = mr
	}
	var evChanges int
	var failedAt mtime.Time
	x.net.OnEvent = func(s testnet.Side, ev verbs.Event) {
		switch ev.Kind {
		case verbs.EventEVState:
			evChanges++
		case verbs.EventQPError:
			if s == testnet.A && failedAt == 0 {
				failedAt = ev.Time
			}
		}
	}
	start := x.net.Now()
	err = x.qa.PostWrite(start, verbs.WriteRequest{ID: 1, Local: src, Remote: remote, Length: uint64(len(x.src))})
	if err != nil {
		t.Fatal(err)
	}
	x.net.Kick(testnet.A)
	x.net.RunUntil(start.Add(time.Millisecond), func() bool { return failedAt != 0 })
	if x.qa.State() != verbs.StateError || !errors.Is(x.qa.Err(), verbs.ErrRemoteAccess) {
		t.Fatalf("case %d: A's QP is %v with %v, want ERROR with ErrRemoteAccess; A %+v", kind, x.qa.State(), x.qa.Err(), x.qa.Stats())
	}
	// One RTT (a few µs here) plus the NAK interval (the base RTT).
	cfgA := epA.Config()
	if d := failedAt.Sub(start); d > 2*cfgA.BaseRTT {
		t.Fatalf("case %d: A failed %v after posting, want within %v", kind, d, 2*cfgA.BaseRTT)
	}
	if evChanges != 0 || x.qa.Stats().EVRetired != 0 || x.qb.Stats().EVRetired != 0 {
		t.Fatalf("case %d: %d EV state changes (A retired %d)", kind, evChanges, x.qa.Stats().EVRetired)
	}
	if x.qb.State() != verbs.StateRTS {
		t.Fatalf("case %d: the responder's QP is %v", kind, x.qb.State())
	}
	if s := x.qb.Stats(); s.ProtNAKsSent == 0 || s.DataReceived != 0 {
		t.Fatalf("case %d: B sent %d protection NAKs and placed %d packets", kind, s.ProtNAKsSent, s.DataReceived)
	}
}

// A forger that sees every packet cannot end the connection with protection
// errors: data packets it forges with a bad key get the responder's NAKs
// (at most one per RTT), which only make the requester resend those PSNs;
// a forged RoCE NAK naming a PSN not in flight is dropped and counted.
func TestAttackProtectionNAK(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 43, Planes: 2}, 1<<20)
	const n = 200
	sent := 0
	a.run(4, 16, func() bool {
		p, payload := decode(t, a.data.pkt)
		p.BTH.PSN = (p.BTH.PSN + 1) & wire.PSNMask
		p.RETH.RKey ^= 0x5a5
		a.inject(testnet.B, a.data.port, wire.AppendPacket(nil, p, payload))
		a.inject(testnet.A, a.sack.port, a.fromB(func(p *wire.Packet) {
			p.BTH.Opcode = wire.OpAck
			p.BTH.PSN = (p.SACK.CackPSN + 1<<20) & wire.PSNMask
			p.AETH = wire.AETH{Syndrome: wire.AETHNakRemoteAccess}
		}))
		sent++
		return sent < n
	})
	if d := a.drops(testnet.A, verbs.DropFatalNACK); d != uint64(sent) {
		t.Fatalf("%d forged NAKs counted, want %d", d, sent)
	}
	if s := a.qb.Stats(); s.ProtNAKsSent == 0 || s.ProtNAKsSent > uint64(sent)/4 {
		t.Fatalf("B answered %d of %d forged bad-key packets", s.ProtNAKsSent, sent)
	}
}
