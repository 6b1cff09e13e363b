package sim

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestPacketSize guards the biggest share of a large run's memory: the
// packets in flight (about 160 per host on --preset big).
func TestPacketSize(t *testing.T) {
	if n := unsafe.Sizeof(packet{}); n != 168 {
		t.Fatalf("a packet takes %d bytes, want 168", n)
	}
}

// The calendar hands out events in (time, sequence) order, never one
// at or after a window's end, and min is the earliest pending event's
// time, whatever the mix of ties, sparse stretches (its jumps over empty
// buckets), far events (its heap) and bursts into one bucket (its chains
// of blocks and large buckets' sort): checked against a plain list over
// many seeds. Drained, it holds no block.
func TestCalendarOrder(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := newCalendar()
		var ref []event
		var seq uint64
		push := func(at Time) {
			seq++
			e := event{at: at, seq: seq, arg: seq}
			c.push(e)
			ref = append(ref, e)
		}
		delay := func() Time {
			switch rng.IntN(4) {
			case 0:
				return 0 // a tie
			case 1:
				return Time(rng.Int64N(1 << calBits)) // same or next bucket
			case 2:
				return Time(rng.Int64N(calSize << calBits)) // inside the ring
			default:
				return Time(rng.Int64N(4 * calSize << calBits)) // often beyond it
			}
		}
		refMin := func() int {
			m := -1
			for i := range ref {
				if m < 0 || ref[i].before(&ref[m]) {
					m = i
				}
			}
			return m
		}
		// burst pushes up to 300 events into one bucket, in no order;
		// a few per seed.
		bursts := 4
		burst := func(now Time) {
			b := now + Time(rng.Int64N(calSize<<calBits))
			for range rng.IntN(300) {
				push(b + Time(rng.Int64N(1<<calBits)))
			}
		}
		for range 1 + rng.IntN(50) {
			push(delay())
		}
		var now, end Time
		for range 300 {
			end += 1 + Time(rng.Int64N(20<<calBits))
			for {
				top := c.advance(end)
				if top == nil || top.at >= end {
					break
				}
				e := c.pop()
				m := refMin()
				if m < 0 || e != ref[m] {
					t.Fatalf("seed %d: popped %+v, want %+v", seed, e, ref[max(m, 0)])
				}
				ref = append(ref[:m], ref[m+1:]...)
				now = e.at
				for range rng.IntN(3) {
					push(now + delay())
				}
				if bursts > 0 && rng.IntN(40) == 0 {
					bursts--
					burst(now)
				}
			}
			if m := refMin(); m >= 0 && ref[m].at < end {
				t.Fatalf("seed %d: window ending %d left %+v", seed, end, ref[m])
			}
			// Messages from other partitions arrive at or after end.
			for range rng.IntN(3) {
				push(end + delay())
			}
			want := never
			if m := refMin(); m >= 0 {
				want = ref[m].at
			}
			if got := c.min(); got != want {
				t.Fatalf("seed %d: min %d, want %d", seed, got, want)
			}
		}
		// Drained, the calendar holds no block.
		for c.advance(never) != nil {
			c.pop()
		}
		if held := int(c.blocks.used) - len(c.blocks.free); held != 0 || c.n != 0 {
			t.Fatalf("seed %d: drained, the calendar holds %d blocks and counts %d events", seed, held, c.n)
		}
	}
}
