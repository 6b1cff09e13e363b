package mrc_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// TestRandomLossNeverEndsATransfer is issue 9's `mrc perf --drop 0.01`
// failure in virtual time: a 16 MiB transfer shaped as mrc perf runs it
// (one plane, 16 EVs, a 20 ms loss timer, 7+2 retries of 64 ms) at 1% and
// 5% random loss, 20 seeds each, with what turned the loss fatal there:
// holes pinned at the cumulative point (one PSN is lost twice) while the
// SACKs for the PSNs 64 and more past one are lost, until the requester's
// first loss timeout (the datapath's full control queue dropped them). The requester times those PSNs out and resends
// them; each arrives as a duplicate, and the responder's answer must name
// it, or the requester resends it every loss timeout while the hole's own
// retransmission waits behind it, until the retry budget runs out.
func TestRandomLossNeverEndsATransfer(t *testing.T) {
	seeds := uint64(20)
	if testing.Short() {
		seeds = 5 // CI's race-detector run
	}
	for _, loss := range []float64{0.01, 0.05} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("loss=%v/seed=%d", loss, seed), func(t *testing.T) {
				t.Parallel()
				runRandomLoss(t, loss, seed)
			})
		}
	}
}

func runRandomLoss(t *testing.T, loss float64, seed uint64) {
	cfg := testnet.Config{Seed: seed, Planes: 1, Loss: loss, Delay: 50 * time.Microsecond, BaseRTT: 100 * time.Microsecond, LossTimeout: 20 * time.Millisecond}
	rts := mrc.RTSAttr{TimeoutExp: 16, RetryLinear: 7, RetryExp: 2, SQDepth: 16} // mrc perf's defaults
	x := newTransfer(t, cfg, mrc.EVProfile{ActivePerPlane: 16}, rts, 16<<20)
	const hole = 100 + 500 // testnet's first PSN is 100
	holeSent, sacksKilled := 0, 0
	x.net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
		var p wire.Packet
		if p.Decode(pkt) != nil {
			return
		}
		kill := false
		switch {
		case from == testnet.A && p.BTH.Opcode.IsData() && p.BTH.PSN == hole:
			holeSent++
			kill = holeSent <= 2
		case from == testnet.B && p.BTH.Opcode == wire.OpSACK && p.SACK.SackOffset > 64 && x.qa.Stats().LossTimeouts == 0:
			sacksKilled++
			kill = true
		}
		if kill {
			pkt[len(pkt)-1] ^= 0xff // a bad ICRC: the receiver drops it
		}
	}
	x.postAll(16)
	if !x.net.RunUntil(mtime.Time(30*time.Second), x.finished) {
		t.Fatalf("transfer unfinished at %v; A %+v", x.net.Now(), x.qa.Stats())
	}
	x.check()
	if holeSent < 3 || sacksKilled == 0 {
		t.Fatalf("the scenario did not happen: PSN %d sent %d times, %d SACKs past a hole lost", hole, holeSent, sacksKilled)
	}
	if s := x.qa.Stats(); s.RetryTimeouts > 2 {
		t.Errorf("%d retry timeouts: a third of the retry budget spent without progress; A %+v", s.RetryTimeouts, s)
	}
}
