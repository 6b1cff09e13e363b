package mrc

import (
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// TestRetransmissionSamples: a SACK naming a retransmitted PSN times its
// latest transmission only when no earlier one can be what it answers
// (docs/spec-gaps.md row 40). The cases are UET's rule and the two things
// our requester also knows: a copy a NACK reported never arrived, and a
// copy older than the longest round trip cannot be answered now.
func TestRetransmissionSamples(t *testing.T) {
	const longest = 45 * time.Microsecond
	us := func(n int) mtime.Time { return mtime.Time(n) * mtime.Time(time.Microsecond) }
	type copy struct {
		at   int  // µs
		dead bool // a NACK reported it (else it left flight on a timer)
	}
	for _, c := range []struct {
		name   string
		copies []copy // earlier transmissions; the latest is sent at 100 µs
		now    int    // when the SACK arrives, µs
		rtx    bool   // the SACK's rtx flag
		known  bool   // an earlier SACK of the peer's set the flag
		want   bool
	}{
		{"sent once", nil, 110, false, false, true},
		{"first copy trimmed", []copy{{0, true}}, 110, true, false, true},
		{"first copy trimmed, peer without the flag", []copy{{0, true}}, 110, false, false, true},
		{"every earlier copy trimmed", []copy{{0, true}, {50, true}, {70, true}}, 110, true, false, true},
		{"first copy timed out: UET's rtx_count 1 with Retx_Flag", []copy{{70, false}}, 110, true, false, true},
		{"first copy timed out, flag clear: it may answer the first", []copy{{70, false}}, 110, false, false, false},
		{"a retransmission timed out", []copy{{40, true}, {70, false}}, 110, true, false, false},
		{"a retransmission timed out longer ago than the longest RTT", []copy{{40, true}, {60, false}}, 110, true, false, true},
		{"first copy timed out long ago, flag clear", []copy{{10, false}}, 110, false, false, true},
		// A peer known to set the flag says the trigger was the first
		// copy, however old: it waited in a queue past the bound, timed
		// out and was resent, and arrived after all. Timing the
		// retransmission would take an RTT far below the fabric's and cap
		// NSCC's max_cwnd for good (docs/spec-gaps.md row 40).
		{"first copy timed out long ago, flag clear from a peer that sets it", []copy{{10, false}}, 110, false, true, false},
		{"first copy trimmed, flag clear from a peer that sets it", []copy{{0, true}}, 110, false, true, true},
		{"a retransmission timed out long ago, flag set by a peer that sets it", []copy{{40, true}, {60, false}}, 110, true, true, true},
	} {
		var r txPkt
		for _, cp := range c.copies {
			r.resent(us(cp.at))
			r.sentAt = us(cp.at)
			if !cp.dead {
				r.mayEcho()
			}
			r.rtx++
		}
		r.resent(us(100))
		r.sentAt = us(100)
		if got := r.answers(us(c.now), c.rtx, c.known, longest); got != c.want {
			t.Errorf("%s: sample %v, want %v", c.name, got, c.want)
		}
	}
}
