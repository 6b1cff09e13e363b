package cc

import "testing"

// Windows below one packet (docs/nscc.md): UET's reductions continue
// below one MTU, each bounded per round (base RTT + target = 21 µs here);
// increases there are those at one packet, at most a doubling.

// subPacketConfig is quietConfig with quick adapt off, so that a trim's
// own reduction shows, starting from two packets.
func subPacketConfig() NSCCConfig {
	c := quietConfig()
	c.DisableQA = true
	c.InitialCwndBytes = 2 * tMTU
	return c
}

// TestNSCCTrimsBelowOnePacket: UET subtracts each trimmed packet and
// stops at one MTU; below it a round's trims take at most a quarter of
// the window the round began with, down to MinPacedCwndBytes (187 B).
// Losses follow the same rule.
func TestNSCCTrimsBelowOnePacket(t *testing.T) {
	n := NewNSCC(subPacketConfig(), 0)
	trim := Nack{Bytes: tMTU, Inflight: 0}
	n.OnNack(at(1), trim) // the round opens at 6000 B: 6000 − 3000
	wantWindow(t, n, 3000)
	n.OnNack(at(2), trim) // same round: floor min(MTU, ¾ × 6000) = MTU
	wantWindow(t, n, 3000)
	n.OnNack(at(22), trim) // a new round at 3000 B: ¾ of it
	wantWindow(t, n, 2250)
	n.OnLoss(at(23), tMTU) // same round
	wantWindow(t, n, 2250)
	n.OnLoss(at(44), tMTU) // ¾ × 2250
	wantWindow(t, n, 1687)
	for i := range 20 {
		n.OnNack(at(66+22*float64(i)), trim)
	}
	wantWindow(t, n, tMTU/16)

	c := subPacketConfig()
	c.MinPacedCwndBytes = -1 // UET's floor
	n = NewNSCC(c, 0)
	for i := range 5 {
		n.OnNack(at(1+22*float64(i)), trim)
	}
	wantWindow(t, n, tMTU)
}

// TestNSCCPenaltyBelowOnePacket: the responder's penalty sheds pen/128 of
// the bytes acknowledged (UET); below one packet, at most pen/128 of the
// window the round began with, so that "64 for a round halves cwnd"
// holds there too.
func TestNSCCPenaltyBelowOnePacket(t *testing.T) {
	c := subPacketConfig()
	c.InitialCwndBytes = tMTU
	n := NewNSCC(c, 0)
	pen := func(p uint8) Ack { a := ack(us(0), false); a.RcvCwndPen = p; return a }
	n.OnAck(at(1), pen(64)) // 3000 − 64 × 3000/128
	wantWindow(t, n, 1500)
	n.OnAck(at(2), pen(64)) // same round: half the round's 3000 B
	wantWindow(t, n, 1500)
	n.OnAck(at(23), pen(64)) // next round: half of 1500
	wantWindow(t, n, 750)
	n.OnAck(at(45), pen(127)) // 750/128 = 5.9 B: the paced floor
	wantWindow(t, n, tMTU/16)
}

// TestNSCCIncreaseBelowOnePacket: an ACK's increase below one packet is
// what it would be at one packet, at most a doubling; from one packet on
// UET's. Fair increase (delay ≥ target, no ECN) at one packet is fi =
// 15,000 B.
func TestNSCCIncreaseBelowOnePacket(t *testing.T) {
	c := subPacketConfig()
	c.InitialCwndBytes = tMTU
	n := NewNSCC(c, 0)
	p := ack(us(0), false)
	p.RcvCwndPen = 96
	n.OnAck(at(1), p) // 3000 × 32/128
	wantWindow(t, n, 750)
	n.OnAck(at(30), ack(us(10), false)) // +15,000, capped at twice 750
	wantWindow(t, n, 1500)
	n.OnAck(at(60), ack(us(10), false))
	wantWindow(t, n, 3000)
	n.OnAck(at(90), ack(us(10), false)) // one packet: UET, 3000 + 15,000
	wantWindow(t, n, 18000)
}

// TestNSCCFastIncreaseBelowOnePacket: fast increase (UET: ACKs that saw
// no queue, a window's worth of them, each adding fi_scale × its bytes)
// takes a window below one packet up to one packet, not only to twice
// itself: its amount does not scale with the window, and an empty queue
// says the rate the window was cut to no longer applies. A proportional
// increase, which saw a queue, still doubles at most.
func TestNSCCFastIncreaseBelowOnePacket(t *testing.T) {
	c := subPacketConfig()
	c.InitialCwndBytes = tMTU
	c.FastIncreaseDelay = us(1)
	c.FIScale = 1
	penalized := func() *NSCC {
		n := NewNSCC(c, 0)
		p := ack(us(0), false)
		p.RcvCwndPen = 96
		n.OnAck(at(1), p) // 3000 × 32/128
		wantWindow(t, n, 750)
		return n
	}
	n := penalized()
	n.OnAck(at(30), ack(0, false)) // 750 + 3000, capped at one packet
	wantWindow(t, n, tMTU)
	n.OnAck(at(60), ack(0, false)) // one packet: UET, 3000 + 3000
	wantWindow(t, n, 2*tMTU)

	n = penalized()
	n.OnAck(at(30), ack(us(2), false)) // a queue of 2 µs: proportional, at most twice 750
	wantWindow(t, n, 1500)
}

// TestNSCCNoEtaWhilePenalized: eta, UET's unconditional increase once per
// adjust period, is an increase like the others, which a penalty blocks.
func TestNSCCNoEtaWhilePenalized(t *testing.T) {
	c := quietConfig()
	c.EtaBytes = 450
	n := NewNSCC(c, 0)
	p := ack(us(0), false)
	p.RcvCwndPen, p.Inflight = 64, 60000
	n.OnAck(at(13), p) // a period has passed: eta would add 450 to 60000 − 1500
	wantWindow(t, n, 58500)
}

// TestNSCCQuickAdaptAboveOnePacketOnly: quick adapt sets the window to
// the bytes delivered, never below one packet; a window already below a
// packet has nothing to adapt, and the trim that would have fired it
// takes its own reduction instead of being swallowed.
func TestNSCCQuickAdaptAboveOnePacketOnly(t *testing.T) {
	c := quietConfig()
	c.InitialCwndBytes = tMTU
	n := NewNSCC(c, 0)
	p := ack(us(0), false)
	p.RcvCwndPen = 64
	n.OnAck(at(1), p)
	wantWindow(t, n, 1500)
	n.OnNack(at(2), Nack{Bytes: tMTU})  // arms quick adapt's trigger; same round
	n.OnNack(at(40), Nack{Bytes: tMTU}) // its window has ended: it would fire; ¾ × 1500 instead
	wantWindow(t, n, 1125)
	if qa := n.Stats().QuickAdapts; qa != 0 {
		t.Errorf("%d quick adapts below one packet", qa)
	}
}

// TestNSCCPenaltyOnAProbeAnswerCutsNothing: a penalized SACK that
// acknowledges nothing, such as the answer to a probe of a QP whose data
// has not started, blocks increases but leaves the window alone; the
// first SACK that acknowledges data then does what it does without it.
func TestNSCCPenaltyOnAProbeAnswerCutsNothing(t *testing.T) {
	n, fresh := NewNSCC(quietConfig(), 0), NewNSCC(quietConfig(), 0)
	w := n.Window()
	n.OnAck(at(1), Ack{RTT: tBase, RcvCwndPen: 1}) // nothing in flight, nothing acknowledged
	wantWindow(t, n, w)
	p := ack(us(0), false)
	p.RcvCwndPen, p.Inflight = 64, 60000
	n.OnAck(at(13), p)
	fresh.OnAck(at(13), p)
	if fresh.Window() >= w {
		t.Fatalf("the data SACK's penalty cut nothing: %d", fresh.Window())
	}
	wantWindow(t, n, fresh.Window())
}
