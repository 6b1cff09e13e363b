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

// spectrumCut is the datagram a 256-byte trim leaves: NVIDIA Spectrum's
// smallest (SONiC's `config switch-trimming global --size 256`), less the
// Ethernet header.
const spectrumCut = 256 - 14

// TestTrimmedByCutting: a switch that trims by cutting the frame to a
// fixed size, leaving the lengths and checksums as they were and
// rewriting only the outermost DSCP (NVIDIA Spectrum's trimming; SONiC's
// test plan: "the checksum and IP length fields in IP header is not
// recalculated"), must still get a NACK for every trim, so that a
// congested fabric is not taken for a failing one. Before, the responder
// dropped such a packet as malformed: every trim became a loss timeout
// and a retired EV.
func TestTrimmedByCutting(t *testing.T) {
	for _, encap := range []mrc.Encap{mrc.EncapPlain, mrc.EncapUSID, mrc.EncapSRv6} {
		for seed := uint64(1); seed <= 4; seed++ {
			cfg := testnet.Config{Seed: seed, Planes: 2, Encap: encap, Trim: 0.03, TrimLastHop: 0.03, TrimCut: spectrumCut}
			x := newTransfer(t, cfg, mrc.EVProfile{}, mrc.RTSAttr{}, 4<<20)
			x.postAll(4)
			if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
				t.Fatalf("encap %v seed %d: unfinished", encap, seed)
			}
			x.check()
			a, b, trims := x.qa.Stats(), x.qb.Stats(), x.net.Stats.Trimmed
			if trims == 0 || b.TrimmedReceived != trims {
				t.Errorf("encap %v seed %d: the responder took %d of %d cut packets as trimmed headers",
					encap, seed, b.TrimmedReceived, trims)
			}
			if a.TrimNACKs == 0 || a.LastHopNACKs == 0 {
				t.Errorf("encap %v seed %d: %d TRIMMED and %d TRIMMED_LASTHOP NACKs, want both", encap, seed, a.TrimNACKs, a.LastHopNACKs)
			}
			if a.LossTimeouts != 0 || a.EVRetired != 0 {
				t.Errorf("encap %v seed %d: %d loss timeouts and %d EVs retired with nothing lost", encap, seed, a.LossTimeouts, a.EVRetired)
			}
		}
	}
}

// TestCutPacketsThatAreNotTrims: a datagram shorter than its length
// fields is a trimmed header only if it is data, a switch marked it
// trimmed and its MRC headers are whole; and as a trimmed header it
// still passes the key check before anything answers it.
func TestCutPacketsThatAreNotTrims(t *testing.T) {
	a := newAttack(t, testnet.Config{Seed: 37, Planes: 2}, 1<<20)
	cut := func(pkt []byte, n int, dscp uint8) []byte {
		c := append([]byte(nil), pkt[:n]...)
		wire.SetOuterDSCP(c, dscp)
		return c
	}
	a.run(4, 16, func() bool {
		p, payload := decode(t, a.data.pkt)
		p.BTH.PSN = (p.BTH.PSN + 300) & wire.PSNMask
		data := wire.AppendPacket(nil, p, payload)
		p.RETH.RKey ^= 0x10
		badKey := wire.AppendPacket(nil, p, payload)
		b := a.net.Endpoint(testnet.B)
		for _, c := range []struct {
			name string
			pkt  []byte
			why  verbs.DropReason
		}{
			{"data with the data DSCP", cut(data, spectrumCut, wire.DefaultDSCP.Data), verbs.DropMalformed},
			{"a SACK", cut(a.sack.pkt, len(a.sack.pkt)-8, wire.DefaultDSCP.Trimmed), verbs.DropMalformed},
			{"headers cut short", cut(data, 70, wire.DefaultDSCP.Trimmed), verbs.DropMalformed},
			{"a bad R_Key", cut(badKey, spectrumCut, wire.DefaultDSCP.Trimmed), verbs.DropBadRKey},
		} {
			before, trimmed := a.drops(testnet.B, c.why), a.qb.Stats().TrimmedReceived
			a.inject(testnet.B, a.data.port, c.pkt)
			if a.drops(testnet.B, c.why) != before+1 || a.qb.Stats().TrimmedReceived != trimmed {
				t.Errorf("%s, cut to %d bytes: not dropped as %v (drops %v)", c.name, len(c.pkt), c.why, b.Stats().Drops)
			}
		}
		trimmed := a.qb.Stats().TrimmedReceived
		a.inject(testnet.B, a.data.port, cut(data, spectrumCut, wire.DefaultDSCP.TrimmedLastHop))
		if a.qb.Stats().TrimmedReceived != trimmed+1 {
			t.Errorf("data cut to %d bytes with the last hop's trimmed DSCP: not taken as a trimmed header", spectrumCut)
		}
		return false
	})
}
