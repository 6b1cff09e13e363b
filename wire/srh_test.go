package wire

import (
	"bytes"
	"slices"
	"testing"
)

func goldenSRH(t testing.TB) (SRH, []byte) {
	h := SRH{NextHeader: ProtoIPv6, HdrExtLen: 4, SegmentsLeft: 1, LastEntry: 1, Tag: 7, N: 2}
	h.Segments[0] = addr(t, "fc000000000000000000000000000002")
	h.Segments[1] = addr(t, "fc000000000000000000000000000001")
	b := []byte{
		0x29,       // next header 41 (IPv6)
		0x04,       // hdr ext len: 2 segments × 2 units of 8 bytes
		0x04,       // routing type 4 (SRH)
		0x01,       // segments left
		0x01,       // last entry: index of the last segment
		0x00,       // flags
		0x00, 0x07, // tag
	}
	b = append(b, h.Segments[0][:]...) // segment list[0] = fc00::2, the final segment
	b = append(b, h.Segments[1][:]...) // segment list[1] = fc00::1, the first segment
	return h, b
}

func TestSRH(t *testing.T) {
	h, b := goldenSRH(t)
	checkCodec(t, h, b)
	if h.Len() != 40 {
		t.Errorf("Len = %d", h.Len())
	}
}

func TestSRHTLVsSkipped(t *testing.T) {
	h, orig := goldenSRH(t)
	b := slices.Concat(orig, []byte{1, 6, 0, 0, 0, 0, 0, 0, 0xAB}) // a PadN TLV, then the next header
	b[srhOffHdrExtLen] = 5                                         // 8 more bytes
	var got SRH
	n, err := got.Decode(b)
	if err != nil || n != 48 {
		t.Fatalf("Decode = %d, %v; want 48", n, err)
	}
	want := h
	want.HdrExtLen = 5
	if got != want {
		t.Errorf("got %+v", got)
	}
	if enc := got.Append(nil); !bytes.Equal(enc, orig) {
		t.Errorf("Append wrote TLVs or the old length: %x", enc)
	}
}

func TestSRHErrors(t *testing.T) {
	_, good := goldenSRH(t)
	for _, tc := range []struct {
		name string
		mod  func(b []byte) []byte
		want error
	}{
		{"routing type 3", func(b []byte) []byte { b[srhOffType] = 3; return b }, ErrUnsupported},
		{"list longer than header", func(b []byte) []byte { b[srhOffHdrExtLen] = 3; return b }, ErrInvalid},
		{"17 segments", func(b []byte) []byte {
			b[srhOffHdrExtLen], b[srhOffLastEntry] = 34, 16
			return append(b, make([]byte, 15*16)...)
		}, ErrInvalid},
		{"segment list cut", func(b []byte) []byte { return b[:len(b)-1] }, ErrTruncated},
		{"fixed part cut", func(b []byte) []byte { return b[:7] }, ErrTruncated},
	} {
		var h SRH
		if n, err := h.Decode(tc.mod(slices.Clone(good))); n != 0 || err != tc.want {
			t.Errorf("%s: Decode = %d, %v; want %v", tc.name, n, err, tc.want)
		}
	}
	// 16 segments is the limit, and fits.
	full := SRH{N: MaxSegments}
	var h SRH
	if n, err := h.Decode(full.Append(nil)); err != nil || n != 8+16*16 || h.N != 16 {
		t.Errorf("16 segments: %d, %v, N=%d", n, err, h.N)
	}
}

func TestSRHClampsN(t *testing.T) {
	for _, n := range []int{-1, 0, 17} {
		h := SRH{N: n}
		if b := h.Append(nil); len(b) != h.Len() {
			t.Errorf("N=%d: Append wrote %d bytes, Len %d", n, len(b), h.Len())
		}
	}
}

// FuzzSRH: whatever decodes re-encodes (without TLVs) to something that
// decodes to the same header, byte-exact when there were no TLVs.
func FuzzSRH(f *testing.F) {
	h, _ := goldenSRH(f)
	f.Add(h.Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h SRH
		n, err := h.Decode(b)
		if err != nil {
			if n != 0 || !isSentinel(err) {
				t.Fatalf("Decode = %d, %v", n, err)
			}
			return
		}
		enc := h.Append(nil)
		if len(enc) != h.Len() || (int(h.HdrExtLen) == 2*h.N && !bytes.Equal(enc, b[:n])) {
			t.Fatalf("round trip:\n in %x\nout %x", b[:n], enc)
		}
		var h2 SRH
		if _, err := h2.Decode(enc); err != nil {
			t.Fatal(err)
		}
		h.HdrExtLen = uint8(2 * h.N)
		if h2 != h {
			t.Fatalf("re-decode = %+v; want %+v", h2, h)
		}
	})
}
