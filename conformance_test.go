package mrc_test

import (
	"errors"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
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
				if to == testnet.B && wire.OuterTrafficClass(pkt)>>2 == wire.DefaultDSCP.TrimmedLastHop {
					trims++
					if marked {
						wire.MarkCE(pkt)
					}
				}
			}
			var withCE, without int
			x.net.Tap = func(_ mtime.Time, from testnet.Side, _ verbs.Transmit, pkt []byte) {
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

// TestNoTrimQP: a QP with RTSAttr.NoTrim sends every data packet,
// retransmissions included, with DSCP_NO_TRIM; a QP without it does not
// use that class.
func TestNoTrimQP(t *testing.T) {
	for _, noTrim := range []bool{false, true} {
		x := newTransfer(t, testnet.Config{Seed: 13, Planes: 2, Loss: 0.02}, mrc.EVProfile{}, mrc.RTSAttr{NoTrim: noTrim, RetryExp: mrc.RetryForever}, 1<<20)
		var noTrimPkts, other, rtx int
		x.net.Tap = func(_ mtime.Time, from testnet.Side, _ verbs.Transmit, pkt []byte) {
			var p wire.Packet
			if from != testnet.A || p.Decode(pkt) != nil || !p.BTH.Opcode.IsData() {
				return
			}
			if p.BTH.Rtx {
				rtx++
			}
			if p.IP.DSCP() == wire.DefaultDSCP.NoTrim {
				noTrimPkts++
			} else {
				other++
			}
		}
		x.postAll(4)
		if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
			t.Fatal("transfer unfinished")
		}
		x.check()
		if rtx == 0 {
			t.Fatal("no retransmissions: the test covers only first transmissions")
		}
		if noTrim && other != 0 || !noTrim && noTrimPkts != 0 {
			t.Fatalf("NoTrim %v: %d data packets with DSCP_NO_TRIM, %d with another DSCP (%d retransmissions)", noTrim, noTrimPkts, other, rtx)
		}
	}
}

// deadFabric starts a transfer on x, cuts every path of both planes, and
// returns when the cut happened.
func deadFabric(x *transfer, paths int) mtime.Time {
	x.postAll(4)
	x.net.RunUntil(mtime.Time(20*time.Microsecond), func() bool { return false })
	for p := range 2 {
		for i := range paths {
			x.net.KillPath(testnet.Path{Plane: p, Index: i})
		}
	}
	return x.net.Now()
}

// TestRetryForeverDefault: by default (RetryExp = RetryForever, the OCP
// API sample's 25) a QP whose every path is dead never gives up: after 5 s
// of virtual time without progress it is still in RTS, and when the paths
// come back the transfer completes. The run is bounded in virtual time and
// in steps.
func TestRetryForeverDefault(t *testing.T) {
	const paths = 4
	x := newTransfer(t, testnet.Config{Seed: 14, Planes: 2}, mrc.EVProfile{PathsPerPlane: paths, ActivePerPlane: 2}, mrc.RTSAttr{}, 1<<20)
	cut := deadFabric(x, paths)
	steps := 0
	x.net.RunUntil(cut.Add(5*time.Second), func() bool { steps++; return len(x.errs) > 0 || steps > 2_000_000 })
	if steps > 2_000_000 {
		t.Fatalf("%d steps in %v of a dead fabric", steps, x.net.Now().Sub(cut))
	}
	if len(x.errs) > 0 || x.qa.State() != verbs.StateRTS {
		t.Fatalf("after %v of a dead fabric: state %v, errors %v", x.net.Now().Sub(cut), x.qa.State(), x.errs)
	}
	if s := x.qa.Stats(); s.RetryTimeouts < 15 {
		t.Fatalf("%d retry timeouts in %v: the backstop did not run past the bounded budget", s.RetryTimeouts, x.net.Now().Sub(cut))
	}
	for p := range 2 {
		for i := range paths {
			x.net.HealPath(testnet.Path{Plane: p, Index: i})
		}
	}
	if !x.net.RunUntil(x.net.Now().Add(60*time.Second), x.finished) {
		t.Fatal("transfer unfinished after the paths came back")
	}
	x.check()
}

// TestRetryBoundedGivesUp: RetryExp = RetryBounded (the former default)
// still ends a QP on a dead fabric with ErrNoPath: 7 retries of the
// default 262 µs timeout, then 8 doubling waits (2× … 256×) before the
// 15th expiry, 517 timeouts in all.
func TestRetryBoundedGivesUp(t *testing.T) {
	const paths = 4
	x := newTransfer(t, testnet.Config{Seed: 14, Planes: 2}, mrc.EVProfile{PathsPerPlane: paths, ActivePerPlane: 2}, mrc.RTSAttr{RetryExp: mrc.RetryBounded}, 1<<20)
	cut := deadFabric(x, paths)
	x.net.RunUntil(cut.Add(10*time.Second), func() bool { return len(x.errs) > 0 })
	if len(x.errs) == 0 || !errors.Is(x.qa.Err(), verbs.ErrNoPath) {
		t.Fatalf("QP state %v err %v after %v of a dead fabric", x.qa.State(), x.qa.Err(), x.net.Now().Sub(cut))
	}
	const timeout = 1024 << 8 * time.Nanosecond
	took := x.net.Now().Sub(cut)
	if lo, hi := 500*timeout, 520*timeout; took < lo || took > hi {
		t.Fatalf("gave up after %v, want %v..%v", took, lo, hi)
	}
	t.Logf("gave up %v after the cut", took)
}

// FuzzPortStatusResponse feeds A, whose port status announcement is
// pending (B's own answers are lost), an endpoint response from B's
// address with an arbitrary EETH, and the raw bytes as a datagram. A must
// not panic, and its announcement must end exactly when the response is
// a PORT_STATUS one (an EV_PROBE response answers an EV probe, never an
// announcement) echoing the tx_timestamp of one of its tries: then it is
// not repeated, otherwise it is, up to its limit of 8.
func FuzzPortStatusResponse(f *testing.F) {
	f.Add(make([]byte, wire.EETHLen), false)
	f.Add(make([]byte, wire.EETHLen), true)
	f.Add([]byte{0x01, 0xC1, 0, 0, 0, 0, 0, 3}, true)
	f.Fuzz(func(t *testing.T, body []byte, echo bool) {
		x := newTransfer(t, testnet.Config{Seed: 15, Planes: 2}, mrc.EVProfile{}, mrc.RTSAttr{}, 1<<20)
		epA := x.net.Endpoint(testnet.A)
		var sentTS []uint16
		var fromB []byte
		port := 0 // the plane fromB came in on; A's other port goes down
		x.net.Tap = func(_ mtime.Time, from testnet.Side, tx verbs.Transmit, pkt []byte) {
			var p wire.Packet
			switch {
			case p.Decode(pkt) != nil:
			case from == testnet.A && p.BTH.Opcode == wire.OpEndpointRequest:
				sentTS = append(sentTS, p.EPReq.TS.TxTimestamp)
			case from == testnet.B && p.BTH.Opcode == wire.OpSACK && fromB == nil:
				fromB, port = append([]byte(nil), pkt...), tx.Port
			}
		}
		x.net.Deliver = func(_ mtime.Time, to testnet.Side, _ int, pkt []byte, _ int) {
			var p wire.Packet
			if to == testnet.A && p.Decode(pkt) == nil && p.BTH.Opcode == wire.OpEndpointResponse {
				pkt[len(pkt)-1] ^= 0xFF // B's answers are lost (bad ICRC)
			}
		}
		x.postAll(1)
		x.net.RunUntil(mtime.Time(time.Millisecond), func() bool { return fromB != nil })
		x.net.SetPortUp(testnet.A, 1-port, false)
		x.net.RunUntil(mtime.Time(time.Second), func() bool { return len(sentTS) > 0 })
		if len(sentTS) == 0 || fromB == nil {
			t.Fatalf("setup: %d announcements, SACK from B %v", len(sentTS), fromB != nil)
		}
		var r wire.EPResponse
		if _, err := r.Decode(append(append([]byte(nil), body...), make([]byte, wire.EETHLen)...)); err != nil {
			t.Fatal(err)
		}
		if echo {
			r.TxTimestamp = sentTS[len(sentTS)-1]
		}
		matched, sentBefore := false, len(sentTS)
		for _, ts := range sentTS {
			matched = matched || ts == r.TxTimestamp && r.Op == wire.EPPortStatusUpdate
		}
		var p wire.Packet
		if err := p.Decode(fromB); err != nil {
			t.Fatal(err)
		}
		p.BTH = wire.BTH{PKey: wire.PKeyDefault, Opcode: wire.OpEndpointResponse, DestQP: wire.QPNEndpoint}
		p.PayloadLen, p.EPResp = 0, r
		resp := wire.AppendPacket(nil, &p, nil)
		epA.HandleDatagram(x.net.Now(), port, body, len(body))
		epA.HandleDatagram(x.net.Now(), port, resp, len(resp))
		x.net.RunUntil(x.net.Now().Add(2*time.Second), func() bool { return false })
		sent := epA.Stats().PortUpdateSent
		switch {
		case matched && sent != uint64(sentBefore):
			t.Fatalf("a response echoing %d answered nothing: %d announcements, %d before it", r.TxTimestamp, sent, sentBefore)
		case !matched && sent != 8:
			t.Fatalf("a response echoing %d (sent %v) was taken as the answer: %d announcements", r.TxTimestamp, sentTS, sent)
		}
	})
}
