package mrc

import (
	"testing"
	"unsafe"
)

// TestTxPktSize guards the requester's footprint: a QP keeps a record for
// every PSN of its window (256 per QP on --preset big's 1 MiB messages,
// 131,072 QPs sending at once).
func TestTxPktSize(t *testing.T) {
	if n := unsafe.Sizeof(txPkt{}); n != 32 {
		t.Fatalf("a PSN record takes %d bytes, want 32", n)
	}
}
