package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/cc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
)

// countingCC is NSCC that counts how often it was told of a loss.
type countingCC struct {
	*cc.NSCC
	losses, gone *int
}

func (c countingCC) OnLoss(now mtime.Time, bytes int) { *c.losses++; c.NSCC.OnLoss(now, bytes) }
func (c countingCC) OnGone(now mtime.Time, bytes int) { *c.gone++; c.NSCC.OnGone(now, bytes) }

// TestDeadPathCutsWindowOnce: the packets a dead path swallows are all one
// event. Its retirement cuts the window once (OnLoss); the packets found
// lost on it afterwards carry no news of congestion and only leave the
// controller's flight (OnGone). Before, every one of them shrank the
// window by a packet.
func TestDeadPathCutsWindowOnce(t *testing.T) {
	var losses, gone int
	newCC := func(now mtime.Time) cc.Controller {
		n := cc.NewNSCC(cc.NSCCConfig{MTU: 4096, LinkBitsPerSec: 100e9, BaseRTT: 10 * time.Microsecond}, now)
		return countingCC{n, &losses, &gone}
	}
	x := newTransfer(t, testnet.Config{Seed: 5, Planes: 1, Encap: mrc.EncapSRv6, NewCC: newCC},
		mrc.EVProfile{ActivePerPlane: 8, BackupPerPlane: 4, PathsPerPlane: 3}, mrc.RTSAttr{}, 4<<20)
	x.net.KillPath(testnet.Path{Plane: 0, Index: 1})
	x.postAll(4)
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatal("unfinished")
	}
	x.check()
	// Only A sends data, so the counts are A's controller's.
	a := x.qa.Stats()
	t.Logf("A: %d loss timeouts, %d EVs retired; controller: %d losses, %d gone", a.LossTimeouts, a.EVRetired, losses, gone)
	if gone == 0 || a.LossTimeouts <= a.EVRetired {
		t.Fatalf("the dead path swallowed too little to tell: %d timeouts, %d retired, %d gone", a.LossTimeouts, a.EVRetired, gone)
	}
	if losses > int(a.EVRetired) {
		t.Fatalf("%d window cuts for %d EVs retired: packets on a retired path still cut the window", losses, a.EVRetired)
	}
}
