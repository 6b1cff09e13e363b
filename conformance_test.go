package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/wire"
)

// Pair tests for what a peer built from the spec sees of us (issue 11).

// rewriteTo edits, in place, every packet of opcode op delivered to side s,
// re-encoding it so that its checksums stay valid.
func rewriteTo(t *testing.T, n *testnet.Net, s testnet.Side, op wire.Opcode, edit func(p *wire.Packet)) {
	t.Helper()
	n.Deliver = func(_ mtime.Time, to testnet.Side, _ int, pkt []byte, _ int) {
		var p wire.Packet
		if to != s || p.Decode(pkt) != nil || p.BTH.Opcode != op {
			return
		}
		payload := append([]byte(nil), p.Payload...)
		edit(&p)
		out := wire.AppendPacket(nil, &p, payload)
		if len(out) != len(pkt) {
			t.Fatalf("rewritten packet is %d bytes, was %d", len(out), len(pkt))
		}
		copy(pkt, out)
	}
}

// TestPortStatusMatchedByTimestamp: B answers A's PORT_STATUS_UPDATE with
// an endpoint response that a peer following the spec would send: every
// field but op and the echoed tx_timestamp zero. A takes it as the answer
// and announces once. A response echoing a timestamp A never sent answers
// nothing: A repeats its announcement up to its limit.
func TestPortStatusMatchedByTimestamp(t *testing.T) {
	for _, c := range []struct {
		name  string
		skew  uint16 // added to the echoed timestamp
		sends uint64 // announcements A makes
	}{
		{"spec peer", 0, 1},
		{"wrong echo", 1, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newTransfer(t, testnet.Config{Seed: 11, Planes: 2}, mrc.EVProfile{}, mrc.RTSAttr{}, 1<<20)
			answers := 0
			rewriteTo(t, x.net, testnet.A, wire.OpEndpointResponse, func(p *wire.Packet) {
				answers++
				p.EPResp = wire.EPResponse{Op: p.EPResp.Op, TxTimestamp: p.EPResp.TxTimestamp + c.skew}
			})
			x.postAll(2)
			x.net.RunUntil(mtime.Time(20*time.Microsecond), func() bool { return false })
			x.net.SetPortUp(testnet.A, 1, false)
			if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
				t.Fatal("transfer unfinished")
			}
			x.net.RunUntil(mtime.Time(2*time.Second), func() bool { return false })
			x.check()
			if answers == 0 {
				t.Fatal("B never answered")
			}
			if s := x.net.Endpoint(testnet.A).Stats(); s.PortUpdateSent != c.sends {
				t.Fatalf("A sent %d port status updates (B answered %d), want %d", s.PortUpdateSent, answers, c.sends)
			}
		})
	}
}

// TestLastHopTrimCarriesCE: B NACKs every trimmed header with the CE mark
// it arrived with. A last-hop trim (incast: the path is fine) leaves the
// EV alone unless the packet was also marked earlier in the fabric; then
// the EV is skipped as for an ECN echo (digest §3.5).
func TestLastHopTrimCarriesCE(t *testing.T) {
	for _, marked := range []bool{false, true} {
		name := map[bool]string{false: "unmarked", true: "marked"}[marked]
		t.Run(name, func(t *testing.T) {
			x := newTransfer(t, testnet.Config{Seed: 12, Planes: 2, TrimLastHop: 0.05}, mrc.EVProfile{}, mrc.RTSAttr{}, 4<<20)
			trims := 0
			x.net.Deliver = func(_ mtime.Time, to testnet.Side, _ int, pkt []byte, _ int) {
				if to == testnet.B && wire.OuterTrafficClass(pkt)>>2 == mrc.DefaultDSCP.TrimmedLastHop {
					trims++
					if marked {
						wire.MarkCE(pkt)
					}
				}
			}
			var withCE, without int
			x.net.Tap = func(_ mtime.Time, from testnet.Side, _ mrc.Transmit, pkt []byte) {
				var p wire.Packet
				if from != testnet.B || p.Decode(pkt) != nil || p.BTH.Opcode != wire.OpNACK {
					return
				}
				if p.NACK.CE {
					withCE++
				} else {
					without++
				}
			}
			x.postAll(4)
			if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
				t.Fatal("transfer unfinished")
			}
			x.check()
			s := x.qa.Stats()
			if trims == 0 || s.LastHopNACKs == 0 {
				t.Fatalf("%d last-hop trims, %d NACKs of them: the test trims nothing", trims, s.LastHopNACKs)
			}
			if marked {
				if withCE == 0 || without != 0 {
					t.Fatalf("B sent %d NACKs with CE and %d without, for CE-marked trims", withCE, without)
				}
				if s.EVSkips == 0 {
					t.Fatalf("%d CE-marked last-hop trims skipped no EV", s.LastHopNACKs)
				}
				return
			}
			if withCE != 0 {
				t.Fatalf("B sent %d NACKs with CE for unmarked trims", withCE)
			}
			if s.EVSkips != 0 {
				t.Fatalf("unmarked last-hop trims skipped %d EVs; the path is not to blame", s.EVSkips)
			}
		})
	}
}
