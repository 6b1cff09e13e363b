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
// host sets still wins when it is larger.
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
	offer := func(start mtime.Time, bytes uint64) {
		for sent := uint64(0); sent < bytes; sent += 4096 {
			e.noteOffered(start+mtime.Time(sent*uint64(rtt)/bytes), min(4096, bytes-sent))
		}
	}
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
		start := rtt * mtime.Time(i+1)
		offer(start, s.offered)
		e.noteOffered(start+rtt, 0) // closes the interval
		if got := q.rcvPenalty(start + rtt); got != s.want {
			t.Errorf("interval %d, %d B offered: penalty %d, want %d", i, s.offered, got, s.want)
		}
	}
	offer(10*rtt, 4*capacity)
	e.noteOffered(11*rtt, 0)
	if got := q.rcvPenalty(13 * rtt); got != 0 {
		t.Errorf("penalty %d after an idle interval, want 0", got)
	}
	q.SetReceivePenalty(127)
	if got := q.rcvPenalty(13 * rtt); got != 127 {
		t.Errorf("penalty %d with the host's 127, want 127", got)
	}
}
