package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/cc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// fixedWindow is a controller whose window never moves.
type fixedWindow int

func (w fixedWindow) Window() int                { return int(w) }
func (fixedWindow) OnSent(mtime.Time, int, bool) {}
func (fixedWindow) OnAck(mtime.Time, cc.Ack)     {}
func (fixedWindow) OnNack(mtime.Time, cc.Nack)   {}
func (fixedWindow) OnLoss(mtime.Time, int)       {}
func (fixedWindow) OnGone(mtime.Time, int)       {}

// TestWindowBelowOnePacketPaces: a window of a quarter packet is a rate
// of one packet per four base RTTs (cc.Controller). With a window of one
// packet the requester sends the next as soon as the last is
// acknowledged, one round trip apart (never less than the 10 µs of
// propagation, the base RTT here); with a quarter of one it keeps one
// packet in flight and spaces them four base RTTs apart on average, each
// gap drawn from 1/2 to 3/2 of that (sender.repace: fixed spacing
// phase-locks an incast's senders): every gap within those bounds, the
// gaps not all alike, and the mean four times the one-packet gap (within
// 10%).
func TestWindowBelowOnePacketPaces(t *testing.T) {
	const (
		mtu   = 1024
		delay = 5 * time.Microsecond
	)
	gaps := func(window int) (least, most, mean time.Duration) {
		cfg := testnet.Config{Seed: 1, Planes: 1, MTU: mtu, BaseRTT: 2 * delay, Delay: delay,
			NewCC: func(mtime.Time) cc.Controller { return fixedWindow(window) }}
		x := newTransfer(t, cfg, mrc.EVProfile{ActivePerPlane: 4}, mrc.RTSAttr{}, 16*mtu)
		var sent []mtime.Time
		x.net.Tap = func(now mtime.Time, from testnet.Side, _ verbs.Transmit, pkt []byte) {
			var p wire.Packet
			if from == testnet.A && p.Decode(pkt) == nil && p.BTH.Opcode.IsData() {
				sent = append(sent, now)
			}
		}
		x.postAll(1)
		if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
			t.Fatalf("window %d: unfinished", window)
		}
		x.check()
		if len(sent) != 16 {
			t.Fatalf("window %d: %d data packets, want 16 (nothing is lost here)", window, len(sent))
		}
		least = time.Hour
		for i := 1; i < len(sent); i++ {
			least = min(least, sent[i].Sub(sent[i-1]))
			most = max(most, sent[i].Sub(sent[i-1]))
		}
		return least, most, sent[len(sent)-1].Sub(sent[0]) / time.Duration(len(sent)-1)
	}
	least1, _, mean1 := gaps(mtu)
	leastQ, mostQ, meanQ := gaps(mtu / 4)
	t.Logf("one packet: gaps %v least, %v mean; a quarter: %v to %v, %v mean", least1, mean1, leastQ, mostQ, meanQ)
	if least1 < 2*delay {
		t.Errorf("window of one packet: a gap of %v, under the %v round trip", least1, 2*delay)
	}
	// The spacing counts from the send; the round trip is within it.
	if rtts4 := 4 * 2 * delay; leastQ < rtts4/2 || mostQ > rtts4*3/2 {
		t.Errorf("window of a quarter packet: gaps %v to %v, want within %v to %v", leastQ, mostQ, rtts4/2, rtts4*3/2)
	}
	if mostQ-leastQ < 4*2*delay/10 {
		t.Errorf("window of a quarter packet: gaps %v to %v, all alike", leastQ, mostQ)
	}
	if r := float64(meanQ) / float64(mean1); r < 3.6 || r > 4.4 {
		t.Errorf("a quarter packet's mean gap is %.2f times one packet's, want 4 (±10%%)", r)
	}
}
