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

// planeRetirements runs a transfer of size bytes over two planes of eight paths
// with the paths dead killed, and returns, for A's EVs retired on each
// plane, how many and at how many distinct times.
func planeRetirements(t *testing.T, seed uint64, dead []testnet.Path, size int) (evs, times [2]int) {
	t.Helper()
	x := newTransfer(t, testnet.Config{Seed: seed, Planes: 2, Encap: mrc.EncapSRv6},
		mrc.EVProfile{ActivePerPlane: 8, BackupPerPlane: 8, PathsPerPlane: 8}, mrc.RTSAttr{}, size)
	at := [2]map[mtime.Time]bool{{}, {}}
	onEvent := x.net.OnEvent
	x.net.OnEvent = func(s testnet.Side, ev verbs.Event) {
		if s == testnet.A && ev.Kind == verbs.EventEVState && ev.To == verbs.EVAssumedBad && ev.From != verbs.EVAssumedBad {
			p := wire.EV(ev.EV).Plane()
			evs[p]++
			at[p][ev.Time] = true
		}
		onEvent(s, ev)
	}
	for _, p := range dead {
		x.net.KillPath(p)
	}
	x.postAll(4)
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatal("unfinished")
	}
	x.check()
	return evs, [2]int{len(at[0]), len(at[1])}
}

// TestDeadPlaneRetiredAsAWhole: when every path of a plane silently drops
// (a T0 that blackholes), the requester retires the plane's EVs, backups
// included, after a few paths lost in a row, rather than one loss timeout
// per path (16 EVs over 8 paths here). One dead path still costs only its
// own EVs.
func TestDeadPlaneRetiredAsAWhole(t *testing.T) {
	for seed := range uint64(10) {
		var all []testnet.Path
		for i := range 8 {
			all = append(all, testnet.Path{Plane: 1, Index: i})
		}
		evs, times := planeRetirements(t, seed, all, 4<<20)
		if evs[1] != 16 || times[1] > 3 {
			t.Errorf("seed %d, dead plane: %d of its 16 EVs retired, at %d different times; want all, at no more than 3", seed, evs[1], times[1])
		}
		evs, _ = planeRetirements(t, seed, []testnet.Path{{Plane: 1, Index: 5}}, 4<<20)
		if evs[1] > 4 {
			t.Errorf("seed %d, one dead path: %d EVs of its plane retired, want only the path's own (at most 4)", seed, evs[1])
		}
	}
}

// TestDeadPathsOfAPlaneAreNotADeadPlane: three of a plane's eight paths
// dead (three T1s down) lose packets of one short transfer, all sent
// before the first loss is known, while the plane's other paths deliver
// packets sent after the lost ones. Only the dead paths are retired,
// never the plane. (Counting only deliveries acknowledged after the
// first loss was known, the requester took the burst for a dead plane.)
func TestDeadPathsOfAPlaneAreNotADeadPlane(t *testing.T) {
	for seed := range uint64(10) {
		dead := []testnet.Path{{Plane: 1, Index: 1}, {Plane: 1, Index: 4}, {Plane: 1, Index: 6}}
		if evs, _ := planeRetirements(t, seed, dead, 64<<10); evs[1] > 6 {
			t.Errorf("seed %d: %d EVs of the plane retired, want only the three dead paths' (at most 6)", seed, evs[1])
		}
	}
}

// TestOnePlaneIsNeverRetiredAsAWhole: with a single plane there is no other
// to move to, so a burst of losses on several paths before anything is
// delivered (an incast's dropped headers, here A's first eight data
// packets) retires those paths only, never the plane's healthy ones.
func TestOnePlaneIsNeverRetiredAsAWhole(t *testing.T) {
	for seed := range uint64(10) {
		x := newTransfer(t, testnet.Config{Seed: seed, Planes: 1, Encap: mrc.EncapSRv6},
			mrc.EVProfile{ActivePerPlane: 16, BackupPerPlane: 8, PathsPerPlane: 8}, mrc.RTSAttr{}, 4<<20)
		hit := map[int]bool{}
		data := 0
		x.net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
			var p wire.Packet
			if from == testnet.A && p.Decode(pkt) == nil && p.BTH.Opcode.IsData() {
				if data++; data <= 8 {
					hit[tx.EV.Path()] = true
					pkt[len(pkt)-1] ^= 0xff
				}
			}
		}
		onEvent := x.net.OnEvent
		x.net.OnEvent = func(s testnet.Side, ev verbs.Event) {
			if s == testnet.A && ev.Kind == verbs.EventEVState && ev.To == verbs.EVAssumedBad && !hit[wire.EV(ev.EV).Path()] {
				t.Errorf("seed %d: EV %v of path %d retired, which lost nothing (lossy paths %v)", seed, ev.EV, wire.EV(ev.EV).Path(), hit)
			}
			onEvent(s, ev)
		}
		x.postAll(4)
		if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
			t.Fatal("unfinished")
		}
		x.check()
		if len(hit) < 3 {
			t.Errorf("seed %d: the burst hit only %d paths; the test needs 3", seed, len(hit))
		}
	}
}
