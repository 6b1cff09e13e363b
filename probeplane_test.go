package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// TestSuspectProbesTakeALivePlane: with every path of plane 1 silently
// dead (the far host's T0 blackholing), the probe that asks whether a
// packet last sent on plane 1 arrived never goes into plane 1 itself: the
// suspect's own plane is the likeliest to share its loss, and an
// unanswered probe costs a loss timeout. (A probe for a packet of another
// plane, suspect because its SACK died in plane 1, may meet plane 1 once:
// TestSuspectProbesLeaveAPlaneThatFailsThem.) Background probes of
// retired EVs test plane 1 on purpose and are not counted.
func TestSuspectProbesTakeALivePlane(t *testing.T) {
	const dead = 1
	ev := mrc.EVProfile{ActivePerPlane: 8, BackupPerPlane: 4, PathsPerPlane: 4}
	var total uint64
	for seed := range uint64(8) {
		x := newTransfer(t, testnet.Config{Seed: seed, Planes: 4, Encap: mrc.EncapSRv6}, ev, mrc.RTSAttr{}, 4<<20)
		sentOn := map[uint32]int{} // PSN → plane of its latest transmission
		into := 0
		tapA(t, x, func(now mtime.Time, tx verbs.Transmit, p *wire.Packet) {
			switch tx.Kind {
			case verbs.KindData:
				sentOn[p.BTH.PSN] = tx.Port
			case verbs.KindProbe:
				if x.suspectProbe(now, tx) && tx.Port == dead && sentOn[p.BTH.PSN] == dead {
					into++
				}
			}
		})
		for i := range ev.PathsPerPlane {
			x.net.KillPath(testnet.Path{Plane: dead, Index: i})
		}
		x.postAll(4)
		if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
			t.Fatalf("seed %d: unfinished", seed)
		}
		x.check()
		if into > 0 {
			t.Errorf("seed %d: %d probes for packets lost in the dead plane went into it", seed, into)
		}
		total += x.qa.Stats().LossTimeouts
	}
	if total == 0 {
		t.Fatal("no loss timeouts: the dead plane was never met and the test shows nothing")
	}
}

// TestSuspectAsksAgainWhenItsProbesPortGoesDown: a suspect's probe is out
// on a plane when the port of that plane goes down: the probe or its
// answer, which takes the probe's path back, is lost with it, so the
// suspect asks again at once on another plane rather than wait out the
// loss timeout.
func TestSuspectAsksAgainWhenItsProbesPortGoesDown(t *testing.T) {
	ev := mrc.EVProfile{ActivePerPlane: 8, BackupPerPlane: 4, PathsPerPlane: 4}
	for seed := range uint64(6) {
		x := newTransfer(t, testnet.Config{Seed: seed, Planes: 3, Encap: mrc.EncapSRv6}, ev, mrc.RTSAttr{}, 4<<20)
		downPort := -1
		var downAt, againAt mtime.Time
		var asked uint32 // the PSN the first suspect's probe names
		tapA(t, x, func(now mtime.Time, tx verbs.Transmit, p *wire.Packet) {
			if tx.Kind != verbs.KindProbe || !x.suspectProbe(now, tx) || tx.Port == 0 {
				return
			}
			switch {
			case downPort < 0:
				downPort, asked = tx.Port, p.BTH.PSN // the first suspect's probe: take its port down below
			case downAt > 0 && againAt == 0 && p.BTH.PSN == asked:
				againAt = now
			}
		})
		x.net.KillPath(testnet.Path{Plane: 0, Index: 1})
		x.postAll(4)
		done := func() bool {
			if downPort >= 0 && downAt == 0 {
				downAt = x.net.Now()
				x.net.SetPortUp(testnet.A, downPort, false)
			}
			return x.finished()
		}
		if !x.net.RunUntil(mtime.Time(time.Second), done) {
			t.Fatalf("seed %d: unfinished", seed)
		}
		x.check()
		if downAt == 0 || againAt == 0 {
			t.Fatalf("seed %d: no suspect probe (down at %v, again at %v); the test needs one", seed, downAt, againAt)
		}
		if gap := againAt.Sub(downAt); gap > time.Microsecond {
			t.Errorf("seed %d: the suspect asked again %v after its probe's port went down", seed, gap)
		}
	}
}

// TestSuspectProbesLeaveAPlaneThatFailsThem: the plane a suspect's probe
// takes dies right after (every path of it, silently) and the data has all
// been sent, so no plane delivers anything newer: the next probe asking
// after the same PSN, or one its answer would have settled (a PSN less
// than a bitmap away, whose suspect waited for that answer), must go to
// another plane, not back into the one whose last delivery, stale now,
// still looks the freshest.
func TestSuspectProbesLeaveAPlaneThatFailsThem(t *testing.T) {
	ev := mrc.EVProfile{ActivePerPlane: 8, BackupPerPlane: 4, PathsPerPlane: 4}
	for seed := range uint64(6) {
		x := newTransfer(t, testnet.Config{Seed: seed, Planes: 3, Encap: mrc.EncapSRv6}, ev, mrc.RTSAttr{}, 256<<10)
		probed := -1 // the plane of the first suspect's first probe
		var asked uint32
		next := -1 // the plane of its next probe
		tapA(t, x, func(now mtime.Time, tx verbs.Transmit, p *wire.Packet) {
			if tx.Kind != verbs.KindProbe || !x.suspectProbe(now, tx) {
				return
			}
			switch {
			case probed < 0 && tx.Port != 0:
				probed, asked = tx.Port, p.BTH.PSN
				for i := range ev.PathsPerPlane {
					x.net.KillPath(testnet.Path{Plane: probed, Index: i})
				}
			case probed >= 0 && next < 0 && near(p.BTH.PSN, asked):
				next = tx.Port
			}
		})
		x.net.KillPath(testnet.Path{Plane: 0, Index: 1})
		x.postAll(1)
		if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
			t.Fatalf("seed %d: unfinished", seed)
		}
		x.check()
		if probed < 0 || next < 0 {
			t.Fatalf("seed %d: no second probe asking near the first suspect's PSN (first on plane %d, next %d); the test needs one", seed, probed, next)
		}
		if next == probed {
			t.Errorf("seed %d: a suspect's probe went unanswered on plane %d and the next asking near its PSN went there again", seed, probed)
		}
	}
}

// tapA has fn see every packet side A of x sends, decoded.
func tapA(t *testing.T, x *transfer, fn func(now mtime.Time, tx verbs.Transmit, p *wire.Packet)) {
	x.net.Tap = func(now mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
		if from != testnet.A {
			return
		}
		var p wire.Packet
		if err := p.Decode(pkt); err != nil {
			t.Fatal(err)
		}
		fn(now, tx, &p)
	}
}

// suspectProbe reports whether probe tx, sent by A at now, asks after a
// held packet: it travels an EV in service, where a background probe of
// a retired EV travels that EV.
func (x *transfer) suspectProbe(now mtime.Time, tx verbs.Transmit) bool {
	st, ok := x.qa.EVState(now, tx.EV)
	return ok && st != verbs.EVAssumedBad
}

// near reports whether PSNs a and b are less than a SACK bitmap's width
// apart.
func near(a, b uint32) bool {
	d := (a - b) & 0xffffff
	return d < wire.SACKBitmapBits || d > 1<<24-wire.SACKBitmapBits
}

// TestNoProbeAsksAfterARetiredPath: a packet held while its EV is suspect
// is resent as soon as a retirement takes that EV out of service (its
// path, or its whole plane, found dead through another packet), not after
// its own probe's answer, which can only say the same: no reliability
// probe ever names a PSN whose latest transmission went into an EV
// already retired. Planes 1 and 2 each lose paths, and 0.2% of all
// packets are lost at random, so probes and their answers are lost too,
// and suspects ask again (without the release, seeds 17 and 56 of these
// fail).
func TestNoProbeAsksAfterARetiredPath(t *testing.T) {
	ev := mrc.EVProfile{ActivePerPlane: 8, BackupPerPlane: 4, PathsPerPlane: 4}
	var asked, timeouts uint64
	for seed := range uint64(64) {
		x := newTransfer(t, testnet.Config{Seed: seed, Planes: 3, Encap: mrc.EncapSRv6, Loss: 0.002}, ev, mrc.RTSAttr{}, 4<<20)
		sentOn := map[uint32]wire.EV{} // PSN → EV of its latest transmission
		tapA(t, x, func(now mtime.Time, tx verbs.Transmit, p *wire.Packet) {
			switch tx.Kind {
			case verbs.KindData, verbs.KindRetransmit:
				sentOn[p.BTH.PSN] = tx.EV
			case verbs.KindProbe:
				if !x.suspectProbe(now, tx) {
					return
				}
				asked++
				if st, ok := x.qa.EVState(now, sentOn[p.BTH.PSN]); ok && st == verbs.EVAssumedBad {
					t.Errorf("seed %d, %v: a probe asks after PSN %d, whose EV %v is already retired", seed, now, p.BTH.PSN, sentOn[p.BTH.PSN])
				}
			}
		})
		for i := range 3 {
			x.net.KillPath(testnet.Path{Plane: 1, Index: i})
		}
		x.net.KillPath(testnet.Path{Plane: 2, Index: 0})
		x.postAll(4)
		if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
			t.Fatalf("seed %d: unfinished", seed)
		}
		x.check()
		timeouts += x.qa.Stats().LossTimeouts
	}
	if asked == 0 || timeouts == 0 {
		t.Fatalf("%d suspect probes, %d loss timeouts: the dead paths were never met and the test shows nothing", asked, timeouts)
	}
}
