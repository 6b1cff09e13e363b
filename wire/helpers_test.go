package wire

import (
	"bytes"
	"slices"
	"testing"
)

// codec is the method set every fixed-size header type has.
type codec[T any] interface {
	*T
	Append([]byte) []byte
	Decode([]byte) (int, error)
}

// checkCodec checks a fixed-size header against golden, its encoding
// written out by hand: want appends exactly golden (also after a prefix
// and into a dirty buffer with spare capacity, without allocating), golden
// decodes to want ignoring trailing bytes and without allocating, and
// every proper prefix of golden is ErrTruncated.
func checkCodec[T comparable, P codec[T]](t *testing.T, want T, golden []byte) {
	t.Helper()
	if got := P(&want).Append(nil); !bytes.Equal(got, golden) {
		t.Errorf("Append:\n got %x\nwant %x", got, golden)
	}
	if got := P(&want).Append([]byte{0xAA}); got[0] != 0xAA || !bytes.Equal(got[1:], golden) {
		t.Errorf("Append after a prefix: got %x", got)
	}
	dirty := bytes.Repeat([]byte{0xEE}, len(golden)+16)[:3]
	if got := P(&want).Append(dirty); !bytes.Equal(got[3:], golden) {
		t.Errorf("Append into a dirty buffer:\n got %x\nwant %x", got[3:], golden)
	}
	if a := testing.AllocsPerRun(100, func() { _ = P(&want).Append(dirty[:3]) }); a != 0 {
		t.Errorf("Append into a buffer with room: %v allocs", a)
	}

	var got T
	n, err := P(&got).Decode(slices.Concat(golden, []byte{0x55, 0x66}))
	if err != nil || n != len(golden) {
		t.Fatalf("Decode = %d, %v; want %d, nil", n, err, len(golden))
	}
	if got != want {
		t.Errorf("Decode:\n got %+v\nwant %+v", got, want)
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = P(&got).Decode(golden) }); a != 0 {
		t.Errorf("Decode: %v allocs", a)
	}
	for i := range len(golden) {
		if n, err := P(&got).Decode(golden[:i]); n != 0 || err != ErrTruncated {
			t.Errorf("Decode of %d of %d bytes = %d, %v; want 0, ErrTruncated", i, len(golden), n, err)
		}
	}
}

// fuzzCodec is the round-trip oracle for a fixed-size header: whatever
// decodes must append back to exactly the bytes consumed, and decode again
// to the same value. Errors must be sentinels, with nothing consumed.
func fuzzCodec[T comparable, P codec[T]](f *testing.F, seeds ...T) {
	for _, s := range seeds {
		f.Add(P(&s).Append(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h T
		n, err := P(&h).Decode(b)
		if err != nil {
			if n != 0 || !isSentinel(err) {
				t.Fatalf("Decode = %d, %v", n, err)
			}
			return
		}
		enc := P(&h).Append(nil)
		if !bytes.Equal(enc, b[:n]) {
			t.Fatalf("round trip not byte-exact:\n in %x\nout %x", b[:n], enc)
		}
		var h2 T
		if _, err := P(&h2).Decode(enc); err != nil || h2 != h {
			t.Fatalf("re-decode = %+v, %v; want %+v", h2, err, h)
		}
	})
}

// addr returns a 16-byte address from its hex digits (no colons).
func addr(t testing.TB, hex string) [16]byte {
	t.Helper()
	var a [16]byte
	b := unhex(t, hex)
	if len(b) != 16 {
		t.Fatalf("address %q is %d bytes", hex, len(b))
	}
	copy(a[:], b)
	return a
}

// unhex decodes hex digits, ignoring spaces, and fails the test on junk.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	var hi byte
	odd := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		var v byte
		switch {
		case c == ' ' || c == '\n' || c == '\t':
			continue
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			t.Fatalf("bad hex digit %q in %q", c, s)
		}
		if odd {
			out = append(out, hi<<4|v)
		} else {
			hi = v
		}
		odd = !odd
	}
	if odd {
		t.Fatalf("odd number of hex digits in %q", s)
	}
	return out
}

// reportPerPacket reports ns/pkt, and GB/s when n > 0, for a b.Loop
// benchmark that handled one packet (of n bytes) per iteration.
func reportPerPacket(b *testing.B, n int) {
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns, "ns/pkt")
	if n > 0 {
		b.ReportMetric(float64(n)/ns, "GB/s")
	}
}
