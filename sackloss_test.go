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

// TestPropertyLostSACKsRetireNoEV: the responder's SACKs are lost with
// probability 0.3 and nothing else goes wrong. Every forward path is
// healthy, so the requester must never retire one of its EVs: before a
// loss timer blames an EV, a reliability probe asks whether the packet
// arrived.
func TestPropertyLostSACKsRetireNoEV(t *testing.T) { forEachSeed(t, runLostSACKs) }

func runLostSACKs(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 99))
	cfg := testnet.Config{Seed: seed, Planes: 1 + r.IntN(2), MTU: 4096, Jitter: time.Duration(r.IntN(3)) * time.Microsecond}
	ev := mrc.EVProfile{ActivePerPlane: 2 + r.IntN(8)}
	x := newTransfer(t, cfg, ev, mrc.RTSAttr{}, (64+r.IntN(512))<<10)
	lost := 0
	x.net.Tap = func(_ mtime.Time, from testnet.Side, _ verbs.Transmit, pkt []byte) {
		var p wire.Packet
		if from == testnet.B && p.Decode(pkt) == nil && p.BTH.Opcode == wire.OpSACK && r.Float64() < 0.3 {
			lost++
			pkt[len(pkt)-1] ^= 0xff // a bad ICRC: A drops it
		}
	}
	x.postAll(1 + r.IntN(8))
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatalf("transfer unfinished at %v; A %+v", x.net.Now(), x.qa.Stats())
	}
	x.check()
	if s := x.qa.Stats(); s.EVRetired != 0 {
		t.Fatalf("%d healthy forward EVs retired (%d SACKs lost, %d loss timeouts)", s.EVRetired, lost, s.LossTimeouts)
	}
}
