package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// TestWindowMismatchBacksOff: the responder tracks 128 PSNs (MPRDest 1)
// while the requester was told 1024 (MPR 8), and its first window is
// larger than 128 packets. PSN 150 is lost, so the responder's window
// stops at 277 while the first burst runs to 1123. The packets beyond it
// get PSN_OOR_WINDOW NACKs, not silence: the requester resends them no
// sooner than one base RTT later, blames no EV for them (only PSN 150's
// loss timer fires), and, once a SACK has advertised the peer's MPR, never
// sends a PSN beyond it.
func TestWindowMismatchBacksOff(t *testing.T) {
	const baseRTT = 100 * time.Microsecond
	const hole = 150
	cfg := testnet.Config{Seed: 3, Planes: 2, MTU: 256, MPRDest: 1, BaseRTT: baseRTT, Delay: baseRTT / 2}
	x := newTransfer(t, cfg, mrc.EVProfile{ActivePerPlane: 8}, mrc.RTSAttr{}, 1<<20)
	var (
		cack      psn.PSN // the responder's cumulative point, as its SACKs leave
		haveSACK  bool
		beyond    int
		nackedAt  = map[uint32]mtime.Time{}
		early     int
		oorNACKs  int
		nackTimes []mtime.Time
		burst     int
		resentOOR int
	)
	x.net.Tap = func(now mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
		var p wire.Packet
		if p.Decode(pkt) != nil {
			return
		}
		switch op := p.BTH.Opcode; {
		case from == testnet.B && op == wire.OpSACK:
			cack, haveSACK = psn.PSN(p.SACK.CackPSN), true
		case from == testnet.B && op == wire.OpNACK && p.NACK.Reason == wire.NackPSNOORWindow:
			oorNACKs++
			nackTimes = append(nackTimes, now)
			if k := len(nackTimes); k > 2 && now.Sub(nackTimes[k-3]) < baseRTT {
				burst++ // a third NACK within one RTT: over the answer cap
			}
			if _, ok := nackedAt[p.NACK.NackPSN]; !ok {
				nackedAt[p.NACK.NackPSN] = now
			}
		case from == testnet.A && op.IsData():
			n := psn.PSN(p.BTH.PSN)
			if n == hole && !p.BTH.Rtx {
				pkt[len(pkt)-1] ^= 0xff // a bad ICRC: the responder drops it
			}
			if haveSACK && x.qa.Stats().SACKsReceived > 0 && n.Sub(cack) > wire.MPRUnit {
				beyond++
			}
			if at, ok := nackedAt[p.BTH.PSN]; ok && p.BTH.Rtx {
				resentOOR++
				if now.Sub(at) < baseRTT {
					early++
				}
				delete(nackedAt, p.BTH.PSN)
			}
		}
	}
	x.postAll(4)
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatalf("transfer unfinished at %v; A %+v; B %+v", x.net.Now(), x.qa.Stats(), x.qb.Stats())
	}
	x.check()
	sa := x.qa.Stats()
	if oorNACKs == 0 || resentOOR == 0 {
		t.Fatalf("the scenario did not happen: %d PSN_OOR_WINDOW NACKs, %d of their PSNs resent; A %+v", oorNACKs, resentOOR, sa)
	}
	if early > 0 {
		t.Errorf("%d of %d NACKed PSNs resent within one base RTT of their NACK", early, resentOOR)
	}
	if burst > 0 {
		t.Errorf("%d PSN_OOR_WINDOW NACKs over two per RTT", burst)
	}
	if beyond > 0 {
		t.Errorf("%d data packets sent beyond the MPR the responder advertised", beyond)
	}
	if sa.EVRetired > 1 || sa.LossTimeouts != 1 {
		t.Errorf("a full responder window was blamed on the paths: %d EVs retired, %d loss timeouts", sa.EVRetired, sa.LossTimeouts)
	}
}
