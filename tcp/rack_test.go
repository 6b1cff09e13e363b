package tcp

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

// lossyTail sends one 64 KB message (16 segments) over an idle 10 Gb/s
// dumbbell with Linux's 200 ms minimum RTO, losing the first
// transmissions of the segments whose indexes lose lists, and returns
// when the sender had it all acknowledged and how many timeouts it took.
func lossyTail(t *testing.T, rack bool, lose ...int) (time.Duration, uint64) {
	t.Helper()
	d := newDumbbell(t, 2, 10e9, 5*time.Microsecond, Config{DisableRACK: !rack}, vswitch.QueueConfig{Buffer: 1 << 20})
	seen := map[uint32]bool{}
	d.Drop = func(pkt []byte) bool {
		ip := binary.BigEndian.Uint16(pkt[4:])
		hl := int(pkt[wire.IPv6Len+12]>>4) * 4
		if int(ip) == hl { // an ACK
			return false
		}
		seq := binary.BigEndian.Uint32(pkt[wire.IPv6Len+4:]) - 0xfffff000
		first := !seen[seq]
		seen[seq] = true
		for _, i := range lose {
			if first && seq == uint32(i*4096) {
				return true
			}
		}
		return false
	}
	f := startFlow(d, 0, 1, 64<<10)
	track(d, f)
	if !d.Run(5*time.Second, f.finished) {
		t.Fatalf("rack=%v lose %v: not done", rack, lose)
	}
	return d.Now.Sub(0), f.snd.Stats().RetryTimeouts
}

// TestRACKTLP: a lost tail, or a hole with fewer than DupThresh segments
// above it, costs a retransmission timeout without RACK-TLP (RFC 5681 and
// RFC 6675 cannot see it) and about two round trips with it, without a
// timeout (RFC 8985 §1: the probe's SACK or the later segments' delivery
// time reveals the loss).
func TestRACKTLP(t *testing.T) {
	for _, lose := range [][]int{{15}, {14}, {13, 15}, {3}} {
		classic, classicRTOs := lossyTail(t, false, lose...)
		fast, rtos := lossyTail(t, true, lose...)
		t.Logf("lose %v: %v (%d RTOs) without RACK-TLP, %v (%d) with", lose, classic, classicRTOs, fast, rtos)
		if rtos != 0 || fast > time.Millisecond {
			t.Errorf("lose %v with RACK-TLP: %v and %d timeouts, want well under a millisecond and none", lose, fast, rtos)
		}
		if lose[0] >= 13 && (classicRTOs == 0 || classic < DefaultMinRTO) {
			t.Errorf("lose %v without RACK-TLP: %v and %d timeouts: a tail loss that needs no timeout", lose, classic, classicRTOs)
		}
	}
}

// TestFastRetransmitWhateverTheWindow: the segment that opens a loss
// episode is resent at once even when what is still in flight fills the
// halved window (RFC 5681 §3.2 step 4, RFC 6675 §5 step 4.3: the fast
// retransmit is not subject to cwnd). Of the last six segments, the
// first and the last four are lost: RACK declares the first lost once
// the one after it is delivered, the window halves to three segments
// with four still in flight, and only the retransmission's delivery can
// show the others lost before the 200 ms timeout.
func TestFastRetransmitWhateverTheWindow(t *testing.T) {
	took, rtos := lossyTail(t, true, 10, 12, 13, 14, 15)
	t.Logf("%v, %d timeouts", took, rtos)
	if rtos != 0 || took > time.Millisecond {
		t.Errorf("%v and %d timeouts, want well under a millisecond and none", took, rtos)
	}
}
