package verbs

import (
	"testing"
	"unsafe"
)

// TestRecordsCopyInWholeMoves keeps the records hosts receive by value a
// multiple of 16 bytes (see the padding of Transmit).
func TestRecordsCopyInWholeMoves(t *testing.T) {
	for name, size := range map[string]uintptr{
		"Transmit": unsafe.Sizeof(Transmit{}),
		"Event":    unsafe.Sizeof(Event{}),
	} {
		if size%16 != 0 {
			t.Errorf("%s is %d bytes, not a multiple of 16: pad it again", name, size)
		}
	}
}
