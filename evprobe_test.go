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

// TestReceiverProbesWithEVProbes: B only receives (RTR). Its SACKs are
// lost until A's loss timer fires, so A resends and B retires the EVs the
// SACKs took (reverse-path repair). B probes that EV with EV_PROBE endpoint requests, not
// reliability probes; A answers each with an EV_PROBE response that
// echoes its timestamp and reflects the EV (never a PORT_STATUS one), and
// enough answers bring B's EV back.
func TestReceiverProbesWithEVProbes(t *testing.T) {
	n, err := testnet.New(testnet.Config{Seed: 5, Planes: 1, MTU: 1024})
	if err != nil {
		t.Fatal(err)
	}
	qa, qb, err := n.ConnectOneWay(mrc.EVProfile{ActivePerPlane: 4, BackupPerPlane: 1}, mrc.RTSAttr{})
	if err != nil {
		t.Fatal(err)
	}
	x := newTransferOn(t, n, qa, qb, 5, 16<<10)
	var requests, answers, wrongAnswers, relProbes, sacksLost int
	asked := map[[2]uint32]bool{} // EV, timestamp
	n.Tap = func(_ mtime.Time, from testnet.Side, _ verbs.Transmit, pkt []byte) {
		var p wire.Packet
		if p.Decode(pkt) != nil {
			return
		}
		switch op := p.BTH.Opcode; {
		case from == testnet.B && op == wire.OpSACK && qa.Stats().LossTimeouts == 0:
			sacksLost++
			pkt[len(pkt)-1] ^= 0xff // a bad ICRC: A drops it
		case from == testnet.B && op == wire.OpProbe:
			relProbes++
		case from == testnet.B && op == wire.OpEndpointRequest && p.EPReq.Op == wire.EPEVProbe:
			requests++
			asked[[2]uint32{uint32(p.EV()), uint32(p.EPReq.TS.TxTimestamp)}] = true
		case from == testnet.A && op == wire.OpEndpointResponse:
			if p.EPResp.Op != wire.EPEVProbe || !asked[[2]uint32{p.EPResp.PortStatusMask, uint32(p.EPResp.TxTimestamp)}] {
				wrongAnswers++
			}
			answers++
		}
	}
	x.postAll(2)
	resurrected := func() bool { return x.finished() && qb.Stats().EVResurrected > 0 }
	if !n.RunUntil(mtime.Time(10*time.Millisecond), resurrected) {
		t.Fatalf("B's EV not back at %v: %d EV_PROBE requests, %d answers, %d reliability probes; B %+v", n.Now(), requests, answers, relProbes, qb.Stats())
	}
	x.check()
	if sb := qb.Stats(); sb.EVRetired == 0 || requests < 3 || answers < 3 {
		t.Fatalf("the scenario did not happen: B retired %d EVs, sent %d EV_PROBE requests, got %d answers", sb.EVRetired, requests, answers)
	}
	if relProbes > 0 {
		t.Errorf("B, which only receives, sent %d reliability probes", relProbes)
	}
	if wrongAnswers > 0 {
		t.Errorf("%d endpoint responses were not EV_PROBE answers to a request B made", wrongAnswers)
	}
}
