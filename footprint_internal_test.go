package mrc

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/openmrc/mrc/internal/psn"
)

// TestTxPktSize guards the requester's footprint: a QP keeps a record for
// every PSN of its window (256 per QP on --preset big's 1 MiB messages,
// 131,072 QPs sending at once).
func TestTxPktSize(t *testing.T) {
	if n := unsafe.Sizeof(txPkt{}); n != 32 {
		t.Fatalf("a PSN record takes %d bytes, want 32", n)
	}
}

// TestImmTable: the responder's WRITE_IMM table, which starts small and
// grows as RQMSNs collide, finds what a table of maxWimm slots indexed by
// RQMSN modulo maxWimm would, whatever the order WRITE_IMMs arrive in and
// however many are in progress (up to maxWimm), and never grows past
// maxWimm slots.
func TestImmTable(t *testing.T) {
	for _, maxWimm := range []int{1, 2, 3, 5, 100, 128, 1000} {
		r := rand.New(rand.NewPCG(uint64(maxWimm), 1))
		var rx receiver
		rx.init(0, 8, maxWimm)
		model := make([]immSlot, maxWimm) // the plain table
		next := uint16(65000)             // wraps during the run
		for step := range 20000 {
			// Arrive: an RQMSN within maxWimm of the next to complete.
			rq := next + uint16(r.IntN(maxWimm))
			k := int(rq) % maxWimm
			s := immSlot{psn: psn.PSN(step), imm: uint32(rq), bytes: uint32(step), key: uint16(k), valid: true}
			*rx.immFor(k) = s
			model[k] = s
			if len(rx.imms) > maxWimm {
				t.Fatalf("maxWimm %d: the table grew to %d slots", maxWimm, len(rx.imms))
			}
			// Complete the next, if here, as deliverImms does.
			for r.IntN(2) == 0 {
				k := int(next) % maxWimm
				got := rx.immAt(k)
				has := got.valid && int(got.key) == k
				if has != model[k].valid || has && *got != model[k] {
					t.Fatalf("maxWimm %d, step %d, RQMSN %d: table has %v (%+v), want %+v", maxWimm, step, next, has, *got, model[k])
				}
				if !has {
					break
				}
				*got, model[k] = immSlot{}, immSlot{}
				next++
			}
		}
	}
}

// TestStateSizes guards the size classes of the per-QP state a large
// simulation holds hundreds of thousands of: a QP fits 1,152 B (not
// 1,280 B) and a responder's acknowledgement state 1,792 B (not 2,048 B).
// An object of more than 512 B that holds pointers takes 8 bytes more
// for the allocator's header.
func TestStateSizes(t *testing.T) {
	const header = 8
	if n := unsafe.Sizeof(QP{}) + header; n > 1152 {
		t.Errorf("a QP takes %d bytes with the allocator's header, want at most 1152", n)
	}
	if n := unsafe.Sizeof(acks{}) + header; n > 1792 {
		t.Errorf("a responder's acknowledgement state takes %d bytes with the allocator's header, want at most 1792", n)
	}
}
