package tcp

import (
	"bytes"
	"testing"
)

// FuzzHeader: Decode never panics, never claims more bytes than it was
// given, and what it accepts re-encodes (SACK blocks and the first MPTCP
// option kept, other options dropped) to a header that decodes to the
// same fields.
func FuzzHeader(f *testing.F) {
	h := Header{SrcPort: 32768, DstPort: 33000, Seq: 1, Ack: 2, Flags: FlagACK | FlagECE, Window: 0xFFFF, NSACK: 2,
		SACK: [MaxSACKBlocks]SACKBlock{{10, 20}, {30, 40}}}
	f.Add(h.Append(nil))
	f.Add((&Header{Flags: FlagPSH | FlagACK}).Append(nil))
	h.NSACK, h.MPTCPLen = 3, 12 // three SACK blocks beside an MPTCP DSS with a data ACK
	copy(h.MPTCP[:], []byte{optMPTCP, 12, 0x20, 0x03, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Add(h.Append(nil))
	f.Add([]byte{0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0x60, 0x10, 0, 0, 0, 0, 0, 0, 2, 4, 5, 0xb4})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		n, err := h.Decode(b)
		if err != nil {
			return
		}
		if n < HeaderLen || n > len(b) || n%4 != 0 {
			t.Fatalf("length %d of %d bytes", n, len(b))
		}
		var g Header
		enc := h.Append(nil)
		if m, err := g.Decode(enc); err != nil || m != len(enc) {
			t.Fatalf("re-encoded header: %d bytes, %v", m, err)
		}
		if g != h {
			t.Fatalf("round trip: %+v, want %+v", g, h)
		}
		if h.NSACK == 0 && !bytes.Equal(enc[:12], b[:12]) {
			t.Fatalf("fixed fields changed")
		}
	})
}

// TestChecksum: the checksum of a segment, written into it, makes the
// one's-complement sum over pseudo-header and segment come out all ones,
// and a phantom (zero) payload's sum equals that of a real zero payload.
func TestChecksum(t *testing.T) {
	src, dst := [16]byte{0xfd, 1, 15: 7}, [16]byte{0xfd, 2, 15: 9}
	h := Header{SrcPort: 1, DstPort: 2, Seq: 0xdeadbeef, Flags: FlagACK, NSACK: 1, SACK: [MaxSACKBlocks]SACKBlock{{5, 9}}}
	seg := h.Append(nil)
	full := append(append([]byte{}, seg...), make([]byte, 1001)...)
	if a, b := Checksum(&src, &dst, seg, len(full)), Checksum(&src, &dst, full, len(full)); a != b {
		t.Fatalf("phantom %#x, real zeros %#x", a, b)
	}
	c := Checksum(&src, &dst, seg, len(seg))
	seg[16], seg[17] = byte(c>>8), byte(c)
	seg[4] ^= 1
	if Checksum(&src, &dst, seg, len(seg)) == c {
		t.Error("a flipped bit keeps the checksum")
	}
}
