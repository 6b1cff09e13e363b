package mrc

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// TestReceivePenaltyFromLoad: the responder sets rcv_cwnd_pen by itself
// from the load offered to it in the last base RTT (docs/nscc.md): none
// while its ports carry what arrives, the excess fraction when last-hop
// trims show more arriving than they carry, and none again once an
// interval passes within capacity or with nothing at all. A penalty the
// host sets still wins when it is larger. With one sender its share is
// the whole port, so its excess is the load's.
func TestReceivePenaltyFromLoad(t *testing.T) {
	e, err := NewEndpoint(Config{Ports: []netip.Addr{netip.MustParseAddr("fd00::1")}, BaseRTT: 10 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	q := &QP{ep: e}
	capacity := e.capacityBytes(e.cfg.BaseRTT) // 125,000 B: 100 Gb/s for 10 µs
	if capacity != 125_000 {
		t.Fatalf("capacity %d B per interval, want 125000", capacity)
	}
	rtt := mtime.Time(e.cfg.BaseRTT)
	steps := []struct {
		offered uint64
		want    uint8
	}{
		{capacity, 0},      // a full port, no backlog
		{2 * capacity, 64}, // twice what the port carries: shed half
		{8 * capacity, 112},
		{200 * capacity, 127}, // capped
		{capacity / 2, 0},
	}
	for i, s := range steps {
		// Two intervals at the same rate: the first is judged when the
		// second begins; the penalty goes on the last arrival's SACK.
		last := offerEvenly(q, rtt*mtime.Time(4*i+1), 2*rtt, 2*s.offered)
		if got := q.rcvPenalty(last, false); got != s.want {
			t.Errorf("interval %d, %d B offered: penalty %d, want %d", i, s.offered, got, s.want)
		}
	}
	offerEvenly(q, 30*rtt, rtt, 4*capacity)
	e.noteOffered(31*rtt, 0)
	if got := q.rcvPenalty(33*rtt, false); got != 0 {
		t.Errorf("penalty %d after an idle interval, want 0", got)
	}
	q.SetReceivePenalty(127)
	if got := q.rcvPenalty(33*rtt, false); got != 127 {
		t.Errorf("penalty %d with the host's 127, want 127", got)
	}
}

// offerEvenly has q's peer offer bytes in packets of equal size, at most
// 4 KiB, spread evenly over d from start, and returns when the last
// arrived.
func offerEvenly(q *QP, start, d mtime.Time, bytes uint64) mtime.Time {
	n := (bytes + 4095) / 4096
	var at mtime.Time
	for i := range n {
		at = start + mtime.Time(i*uint64(d)/n)
		size := bytes*(i+1)/n - bytes*i/n
		q.noteSender(at, size)
	}
	return at
}

// TestReceivePenaltyShare: an overloaded responder asks each sender to
// shed its excess over an equal share of the port among the active
// senders, not the same fraction of all: four senders, one at twice the
// others' rate, into a port they overload 1.25-fold. Their share is 25 Gb/s.
// The fast one (62.5 Gb/s) sheds 60% of it, the others (31.25 Gb/s) 20%.
// A sender whose messages have all arrived leaves the count, and the
// remaining three share the port; a sender below its share sheds
// nothing. Without overload, nobody sheds.
func TestReceivePenaltyShare(t *testing.T) {
	e, err := NewEndpoint(Config{Ports: []netip.Addr{netip.MustParseAddr("fd00::1")}, BaseRTT: 10 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	qs := make([]*QP, 4)
	for i := range qs {
		qs[i] = &QP{ep: e}
	}
	rtt := mtime.Time(e.cfg.BaseRTT)
	gap := []mtime.Time{rtt / 8 * 4096 / 78125 * 16, 0, 0, 0} // filled below
	// Packet spacing for a rate of r Gb/s with 4096 B packets: 32768/r ns.
	spacing := func(gbps float64) mtime.Time { return mtime.Time(32768 / gbps * float64(time.Nanosecond)) }
	gap[0] = spacing(62.5)
	for i := 1; i < 4; i++ {
		gap[i] = spacing(31.25)
	}
	// Three base RTTs of arrivals, interleaved in time order.
	next := make([]mtime.Time, 4)
	var last [4]mtime.Time
	for {
		i := 0
		for j := range next {
			if next[j] < next[i] {
				i = j
			}
		}
		if next[i] >= 3*rtt {
			break
		}
		qs[i].noteSender(next[i], 4096)
		last[i] = next[i]
		next[i] += gap[i]
	}
	// Load 156.25/100: the equal cut would be 128 × 0.36 = 46 for all.
	for i, want := range []uint8{77, 26, 26, 26} {
		if got := qs[i].rcvPenalty(last[i], false); got != want {
			t.Errorf("sender %d: penalty %d, want %d", i, got, want)
		}
	}
	// Sender 3 leaves: the share is 33.3 Gb/s, above the slow ones'
	// rate: they shed nothing; the fast one 128 × (62.5 − 33.3)/62.5 = 60.
	e.rfc.senders.remove(&qs[3].rx.acks.load)
	for i, want := range []uint8{60, 0, 0} {
		if got := qs[i].rcvPenalty(last[i], false); got != want {
			t.Errorf("sender %d of 3: penalty %d, want %d", i, got, want)
		}
	}
}

// TestSenderRateOverTheSpan: a sender's rate is measured over two base
// RTTs even when its packets come in bursts. Here bursts of eight 4 KiB
// packets at 100 Gb/s, one burst per 10 µs base RTT: 3.28 bytes per ns.
// Measured over its last 16 packets (two bursts, 15 packets in 12.3 µs)
// it would read 5.0, a penalty for a sender that is within its share.
func TestSenderRateOverTheSpan(t *testing.T) {
	e, err := NewEndpoint(Config{Ports: []netip.Addr{netip.MustParseAddr("fd00::1")}, BaseRTT: 10 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	q := &QP{ep: e}
	rtt := mtime.Time(e.cfg.BaseRTT)
	var at mtime.Time
	for b := range mtime.Time(10) {
		for i := range mtime.Time(8) {
			at = b*rtt + i*4096*8*1000/100_000 // 327 ns apart at 100 Gb/s
			q.noteSender(at, 4096)
		}
	}
	const want = 8 * 4096.0 / 10_000 // bytes per ns
	if got := q.rx.acks.load.rate(at, rateSpan*e.cfg.BaseRTT); got < want*0.95 || got > want*1.15 {
		t.Errorf("rate %.2f B/ns, want %.2f (within -5%%, +15%%)", got, want)
	}
}
