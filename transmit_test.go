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

// TestTransmitAddress checks, in every encapsulation and for every packet
// kind a lossy, trimming transfer produces, that the Transmit record says
// what the bytes say: the peer port's address as the final destination,
// the EV and the traffic class of every IPv6 header. Hosts route by these
// fields instead of parsing the packet again.
func TestTransmitAddress(t *testing.T) {
	for _, encap := range []mrc.Encap{mrc.EncapPlain, mrc.EncapUSID, mrc.EncapSRv6} {
		t.Run(encap.String(), func(t *testing.T) {
			cfg := testnet.Config{Seed: 3, Planes: 2, Encap: encap, Loss: 0.02, Trim: 0.02}
			x := newTransfer(t, cfg, mrc.EVProfile{}, mrc.RTSAttr{}, 256<<10)
			kinds := map[verbs.PacketKind]int{}
			x.net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
				var p wire.Packet
				if err := p.Decode(pkt); err != nil {
					t.Fatalf("%v packet does not decode: %v", tx.Kind, err)
				}
				if encap == mrc.EncapUSID {
					p.ResolveUSID(wire.F3216)
				}
				peer := testnet.Addr(1-from, tx.Port).As16()
				if tx.Dst != peer || p.Final() != peer {
					t.Fatalf("%v on port %d: Transmit.Dst %x, packet's final %x, peer %x", tx.Kind, tx.Port, tx.Dst, p.Final(), peer)
				}
				if tx.EV != p.EV() || p.Encap && tx.EV != wire.JoinEV(p.UDP.SrcPort, p.Outer.FlowLabel) {
					t.Fatalf("%v: Transmit.EV %v, packet's %v", tx.Kind, tx.EV, p.EV())
				}
				if tx.TrafficClass != p.IP.TrafficClass || p.Encap && tx.TrafficClass != p.Outer.TrafficClass {
					t.Fatalf("%v: Transmit.TrafficClass %#x, packet's %#x", tx.Kind, tx.TrafficClass, p.IP.TrafficClass)
				}
				kinds[tx.Kind]++
			}
			x.postAll(4)
			if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
				t.Fatalf("transfer did not finish by %v", x.net.Now())
			}
			x.check()
			for _, k := range []verbs.PacketKind{verbs.KindData, verbs.KindRetransmit, verbs.KindSACK, verbs.KindNACK} {
				if kinds[k] == 0 {
					t.Errorf("no %v packet checked (%v)", k, kinds)
				}
			}
		})
	}
}
