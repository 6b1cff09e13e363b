package mptcp

import (
	"testing"
	"time"

	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/vswitch"
)

// mss1460 is the payload of a full Ethernet segment, as the published
// experiments use.
const mss1460 = 1460

// share runs an MPTCP connection of subflows subflows (host 0) and a
// single-path TCP NewReno flow (host 1), both long, into host 2 over a
// 1 Gb/s dumbbell with 100 µs links (a 400 µs base RTT, a BDP of 50 KB):
// the switch port facing host 2 is the one bottleneck, a tail-drop queue
// of buffer bytes. Packets from the hosts get up to one packet time of
// jitter, drawn from seed. It returns each connection's data-level
// goodput over [warm, end) in Gb/s.
func share(t *testing.T, cc CC, subflows, buffer int, seed uint64, warm, end time.Duration) (mp, tc float64) {
	t.Helper()
	c := tcp.Config{MSS: mss1460}
	d := newNet(t, 3, 1e9, 100*time.Microsecond, Config{CC: cc, Subflows: subflows, TCP: c}, c, vswitch.QueueConfig{Buffer: buffer})
	d.SetJitter(12*time.Microsecond, seed)
	mf := d.startMPTCP(0, 2, 1<<31-1)
	tf := d.startTCP(1, 2, 1<<31-1)
	mr, tr := mf.rcv.(*Conn), tf.rcv.(*tcp.Conn)
	d.Run(warm, nil)
	m0, t0 := mr.Stats().PayloadReceived, tr.Stats().PayloadReceived
	d.Run(end, nil)
	secs := (end - warm).Seconds()
	return float64(mr.Stats().PayloadReceived-m0) * 8 / secs / 1e9, float64(tr.Stats().PayloadReceived-t0) * 8 / secs / 1e9
}

// TestDoNoHarm reproduces RFC 6356's second goal, "do no harm": an
// MPTCP connection of two subflows sharing one bottleneck with a
// single-path TCP flow takes no more capacity than the TCP flow, under
// LIA (RFC 6356 §3) and OLIA (Khalili et al., CoNEXT 2012), where the
// same two subflows uncoupled take about two TCP flows' worth (RFC 6356
// §1's problem: NewReno on each subflow "would give the multipath flow
// more than its fair share").
//
// The goodputs are averaged over seeds of the jitter, the ratio of the
// means is asserted. The tolerance, 20%, covers two things: the spread of
// TCP against TCP on this harness (an MPTCP connection of one subflow is
// a TCP flow: its ratio runs 0.96–1.07 from seed to seed), and LIA's
// known residual aggressiveness at packet level (its alpha takes the
// largest cwnd/rtt², so desynchronised subflow windows grow faster than
// the fluid model behind RFC 6356 assumes; Khalili et al. show LIA "can
// be excessively aggressive towards TCP users"). Uncoupled subflows
// must take at least 1.8 times the TCP flow's share, so the test fails
// if the coupling is lost.
func TestDoNoHarm(t *testing.T) {
	seeds := uint64(4)
	warm, end := 200*time.Millisecond, 1700*time.Millisecond
	if testing.Short() {
		seeds, end = 2, 1200*time.Millisecond
	}
	const buffer = 128 << 10 // 2.6 BDPs
	for _, tc := range []struct {
		cc       CC
		subflows int
		lo, hi   float64 // the bounds of the MPTCP:TCP goodput ratio
	}{
		{Uncoupled, 1, 0.8, 1.2}, // the control: one subflow is a TCP flow
		{LIA, 2, 0, 1.2},
		{OLIA, 2, 0, 1.2},
		{Uncoupled, 2, 1.8, 3},
	} {
		var sm, st float64
		for seed := range seeds {
			m, c := share(t, tc.cc, tc.subflows, buffer, seed, warm, end)
			sm, st = sm+m, st+c
		}
		sm, st = sm/float64(seeds), st/float64(seeds)
		r := sm / st
		t.Logf("%v, %d subflows: MPTCP %.3f Gb/s, TCP %.3f Gb/s: ratio %.3f (want %.1f..%.1f)", tc.cc, tc.subflows, sm, st, r, tc.lo, tc.hi)
		if r < tc.lo || r > tc.hi || sm+st < 0.9 {
			t.Errorf("%v, %d subflows: ratio %.3f outside [%.1f, %.1f], or the link %.0f%% used", tc.cc, tc.subflows, r, tc.lo, tc.hi, (sm+st)*100)
		}
	}
}
