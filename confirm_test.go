package mrc_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// TestPropertyNoTrimNACKsCongestionKeepsEVs: with no trim NACKs to come
// (RTSAttr.NoTrimNACKs), data packets are lost on healthy paths, as
// congestion drops them: one in 40, and always the fourth. Each loss is
// found by the loss timer, and the requester must resend it without
// retiring the EV, because a probe of that EV comes back. Without the
// attribute the same losses retire EVs, which shows the test can fail.
func TestPropertyNoTrimNACKsCongestionKeepsEVs(t *testing.T) {
	forEachSeed(t, func(t *testing.T, seed uint64) {
		if retired := runCongestionLoss(t, seed, mrc.RTSAttr{NoTrimNACKs: true}); retired != 0 {
			t.Fatalf("%d healthy EVs retired", retired)
		}
		if seed < 20 {
			if retired := runCongestionLoss(t, seed, mrc.RTSAttr{}); retired == 0 {
				t.Fatalf("with trim NACKs expected, no EV was retired: the losses did not reach the loss timer")
			}
		}
	})
}

// runCongestionLoss moves a random transfer while dropping A's data
// packets as congestion would, and returns how many EVs A retired.
func runCongestionLoss(t *testing.T, seed uint64, rts mrc.RTSAttr) (retired uint64) {
	r := rand.New(rand.NewPCG(seed, 41))
	cfg := testnet.Config{Seed: seed, Planes: 1 + r.IntN(2), MTU: 4096}
	ev := mrc.EVProfile{ActivePerPlane: 2 + r.IntN(8)}
	rts.RetryExp = mrc.RetryForever
	x := newTransfer(t, cfg, ev, rts, (64+r.IntN(512))<<10)
	data := 0
	x.net.Tap = func(_ mtime.Time, from testnet.Side, _ verbs.Transmit, pkt []byte) {
		var p wire.Packet
		if from == testnet.A && p.Decode(pkt) == nil && p.BTH.Opcode.IsData() {
			if data++; data == 4 || r.Float64() < 1.0/40 {
				pkt[len(pkt)-1] ^= 0xff // a bad ICRC: B drops it, and sends no NACK
			}
		}
	}
	x.postAll(1 + r.IntN(8))
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatalf("transfer unfinished at %v; A %+v", x.net.Now(), x.qa.Stats())
	}
	x.check()
	return x.qa.Stats().EVRetired
}

// TestNoTrimNACKsRetiresDeadEV: with RTSAttr.NoTrimNACKs a path that is
// really dead (it loses everything, probes too) is still retired, after its
// packet is resent and selfProbeTries probes of it go unanswered, and the
// transfer completes on the other EVs.
func TestNoTrimNACKsRetiresDeadEV(t *testing.T) {
	for seed := range uint64(20) {
		cfg := testnet.Config{Seed: seed, Planes: 1, MTU: 4096}
		x := newTransfer(t, cfg, mrc.EVProfile{ActivePerPlane: 4}, mrc.RTSAttr{NoTrimNACKs: true, RetryExp: mrc.RetryForever}, 256<<10)
		var dead wire.EV
		x.net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
			if from != testnet.A {
				return
			}
			if dead == 0 {
				dead = tx.EV
			}
			if tx.EV == dead {
				pkt[len(pkt)-1] ^= 0xff
			}
		}
		x.postAll(4)
		if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
			t.Fatalf("seed %d: transfer unfinished at %v; A %+v", seed, x.net.Now(), x.qa.Stats())
		}
		x.check()
		st, ok := x.qa.EVState(x.net.Now(), dead)
		if ok && st != verbs.EVAssumedBad {
			t.Fatalf("seed %d: the dead EV %v is %v, want ASSUMED_BAD (A %+v)", seed, dead, st, x.qa.Stats())
		}
		if x.qa.Stats().EVRetired == 0 {
			t.Fatalf("seed %d: no EV retired", seed)
		}
	}
}
