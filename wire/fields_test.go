package wire

import (
	"bytes"
	"testing"
)

func TestGrowReusesCapacity(t *testing.T) {
	buf := make([]byte, 2, 16)
	buf[0], buf[1] = 1, 2
	for i := 2; i < 16; i++ {
		buf[:16][i] = 0xEE // dirty spare capacity
	}
	all, hdr := grow(buf, 5)
	if &all[0] != &buf[0] {
		t.Error("grow reallocated a buffer with room")
	}
	// The new bytes are not zeroed (encoders write every byte, see
	// TestAppendIntoDirty); what was there before stays.
	if !bytes.Equal(all, []byte{1, 2, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE}) || len(hdr) != 5 || &hdr[0] != &all[2] {
		t.Errorf("grow = %x, %x", all, hdr)
	}
	all, hdr = grow(nil, 3)
	if len(all) != 3 || len(hdr) != 3 {
		t.Errorf("grow(nil, 3) = %x, %x", all, hdr)
	}
}

func TestTypeNext(t *testing.T) {
	for typ := range uint8(16) {
		for next := range uint8(32) {
			var b [2]byte
			putTypeNext(b[:], typ, next)
			if b[1]&^nextHdrLow != 0 {
				t.Fatalf("putTypeNext(%d, %d) wrote byte 1 bits %#x", typ, next, b[1])
			}
			if gt, gn := typeNext(b[:]); gt != typ || gn != next {
				t.Fatalf("typeNext(putTypeNext(%d, %d)) = %d, %d", typ, next, gt, gn)
			}
		}
	}
	var b [2]byte
	putTypeNext(b[:], 0xA, 0x15) // type 1010, next_hdr 10101
	if b != [2]byte{0xAA, 0x80} {
		t.Errorf("putTypeNext(0xA, 0x15) = %x; want aa80", b)
	}
}

func TestPSNDiff(t *testing.T) {
	for _, tc := range []struct {
		a, b uint32
		want int32
	}{
		{5, 3, 2},
		{3, 5, -2},
		{0, 0xFFFFFF, 1},  // wraps forward
		{0xFFFFFF, 0, -1}, // wraps backward
		{0x800000, 0, -0x800000},
		{0x7FFFFF, 0, 0x7FFFFF},
	} {
		if got := psnDiff(tc.a, tc.b); got != tc.want {
			t.Errorf("psnDiff(%#x, %#x) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
