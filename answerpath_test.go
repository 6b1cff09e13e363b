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

// answerProfile: 2 planes of 8 paths, 8 EVs in service and 8 backups a
// plane (each path twice).
var answerProfile = mrc.EVProfile{ActivePerPlane: 8, BackupPerPlane: 8, PathsPerPlane: 8}

// TestProbeAnswersTakeTheProbesPath: with SRv6 paths the SACK answering
// a probe goes back on the probe's plane and path, so that it answers
// for that path alone (a doubt or a suspect is not failed by another
// path's fault). SACKs of data are sprayed, as the reverse-path EVs of
// digest §3.4 are: a QP that only receives learns its dead reverse paths
// from them (TestReceiverOnlyRepairsReversePath).
func TestProbeAnswersTakeTheProbesPath(t *testing.T) {
	gone := testnet.Path{Plane: 1, Index: 2}
	for seed := range uint64(3) {
		x := newTransfer(t, testnet.Config{Seed: seed, Planes: 2, Encap: mrc.EncapSRv6}, answerProfile, mrc.RTSAttr{}, 4<<20)
		healAt := mtime.Time(60 * time.Microsecond)
		lose := true
		answers, wrong, sacks, sprayed := 0, 0, 0, 0
		x.net.Tap = func(now mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
			if lose && from == testnet.A && (testnet.Path{Plane: tx.Port, Index: tx.EV.Path()}) == gone {
				if now < healAt {
					pkt[len(pkt)-1] ^= 0xff
				} else {
					lose = false
				}
			}
			var p wire.Packet
			if from != testnet.B || p.Decode(pkt) != nil || p.BTH.Opcode != wire.OpSACK {
				return
			}
			sameWay := tx.EV.Plane() == p.SACK.Entropy.Plane() && tx.EV.Path() == p.SACK.Entropy.Path()
			switch {
			case p.SACK.PR:
				answers++
				if !sameWay {
					wrong++
				}
			default:
				sacks++
				if !sameWay {
					sprayed++
				}
			}
		}
		back := 0
		onEvent := x.net.OnEvent
		x.net.OnEvent = func(s testnet.Side, ev verbs.Event) {
			onEvent(s, ev)
			if s == testnet.A && ev.Kind == verbs.EventEVState && ev.From == verbs.EVAssumedBad {
				back++
			}
		}
		x.postAll(4)
		if !x.net.RunUntil(mtime.Time(time.Second), func() bool { return x.finished() && back > 0 }) {
			t.Fatalf("seed %d: unfinished, or the lost path never came back", seed)
		}
		x.check()
		if answers < 3 || wrong > 0 {
			t.Errorf("seed %d: %d of %d probe answers went back on another path than their probe's", seed, wrong, answers)
		}
		if sacks < 50 || sprayed == 0 {
			t.Errorf("seed %d: %d of %d SACKs of data went back on another path than their trigger's; want them sprayed", seed, sprayed, sacks)
		}
	}
}

// TestEVProbeAnswersTakeTheProbesPath: a QP that only receives probes the
// reverse paths it retired with EV probes (evprobe.go); the peer endpoint
// answers each on the probed plane and path.
func TestEVProbeAnswersTakeTheProbesPath(t *testing.T) {
	n, err := testnet.New(testnet.Config{Seed: 41, Planes: 2, Encap: mrc.EncapSRv6})
	if err != nil {
		t.Fatal(err)
	}
	qa, qb, err := n.ConnectOneWay(answerProfile, mrc.RTSAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if qb.State() != verbs.StateRTR {
		t.Fatalf("B in %v, want RTR", qb.State())
	}
	src, _ := n.Endpoint(testnet.A).RegisterPhantom(1<<30, verbs.AccessLocal)
	dst, _ := n.Endpoint(testnet.B).RegisterPhantom(1<<30, verbs.AccessRemoteWrite)
	gone, healed := testnet.Path{Plane: 1, Index: 5}, false
	answers, wrong := 0, 0
	n.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
		if from == testnet.B && !healed && (testnet.Path{Plane: tx.Port, Index: tx.EV.Path()}) == gone {
			pkt[len(pkt)-1] ^= 0xff // B's way back over the path is dead
		}
		var p wire.Packet
		if from != testnet.A || tx.Kind != verbs.KindEndpoint || p.Decode(pkt) != nil || p.EPResp.Op != wire.EPEVProbe {
			return
		}
		answers++
		if probed := wire.EV(p.EPResp.PortStatusMask); tx.EV.Plane() != probed.Plane() || tx.EV.Path() != probed.Path() {
			wrong++
		}
	}
	done, retired, back := 0, 0, 0
	n.OnEvent = func(s testnet.Side, ev verbs.Event) {
		switch {
		case s == testnet.A && ev.Kind == verbs.EventWriteDone && ev.Err == nil:
			done++
		case s == testnet.B && ev.Kind == verbs.EventEVState && ev.To == verbs.EVAssumedBad:
			retired++
		case s == testnet.B && ev.Kind == verbs.EventEVState && ev.From == verbs.EVAssumedBad:
			back++
		}
	}
	// One WRITE at a time: the last SACK of each, when lost, is missed
	// (A's loss timer, then a probe naming a PSN B has).
	for i := range 32 {
		if err := qa.PostWrite(n.Now(), verbs.WriteRequest{ID: uint64(i), Local: src, Remote: dst, Length: 64 << 10}); err != nil {
			t.Fatal(err)
		}
		n.Kick(testnet.A)
		if !n.RunUntil(n.Now()+mtime.Time(10*time.Millisecond), func() bool { return done == i+1 }) {
			t.Fatalf("WRITE %d unfinished", i)
		}
	}
	if retired == 0 {
		t.Fatal("B retired none of its EVs; the test needs it to")
	}
	healed = true
	if !n.RunUntil(n.Now()+mtime.Time(100*time.Millisecond), func() bool { return back >= retired }) {
		t.Fatalf("after healing B brought back %d of %d EVs", back, retired)
	}
	if answers == 0 || wrong > 0 {
		t.Errorf("%d of %d EV probe answers went back on another path than their probe's", wrong, answers)
	}
}
