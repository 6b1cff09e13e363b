package wire

import (
	"math/rand/v2"
	"testing"
)

// The worked example of digest §3.12 (third-party emulator, labelled
// F3216): EV 0x0000 → fcbb:0020:0010:0022::, EV 0x0100 →
// fcbb:1020:1010:1022::. The plane bit lands in fcbb:X020, which is inside
// a 32-bit block, so the example reads as a 16-bit block "fcbb" with three
// 16-bit uSIDs (T0, T1, T0); we test it that way.
func TestUSIDDigestExample(t *testing.T) {
	f1616 := USIDFormat{BlockBits: 16, CSIDBits: 16}
	block := addr(t, "fcbb0000000000000000000000000000")
	if a := f1616.Container(block, 0x0020, 0x0010, 0x0022); a != addr(t, "fcbb0020001000220000000000000000") {
		t.Errorf("EV 0x0000 container = %x", a)
	}
	if a := f1616.Container(block, 0x1020, 0x1010, 0x1022); a != addr(t, "fcbb1020101010220000000000000000") {
		t.Errorf("EV 0x0100 container = %x", a)
	}
}

// TestUSIDPath walks an F3216 container along its path.
func TestUSIDPath(t *testing.T) {
	block := addr(t, "fcbbbb00000000000000000000000000")
	a := F3216.Container(block, 0x0020, 0x0010, 0x0022, 0x0101)
	if want := addr(t, "fcbbbb00002000100022010100000000"); a != want {
		t.Fatalf("Container = %x; want %x", a, want)
	}
	if F3216.Slots() != 6 || F3216.Active(a) != 0x20 || F3216.CSID(a, 2) != 0x22 || F3216.CSID(a, 6) != 0 || F3216.CSID(a, -1) != 0 {
		t.Errorf("Slots %d Active %#x CSID(2) %#x", F3216.Slots(), F3216.Active(a), F3216.CSID(a, 2))
	}
	if n := F3216.Node(a); n != addr(t, "fcbbbb00002000000000000000000000") {
		t.Errorf("Node = %x", n)
	}
	final := addr(t, "fcbbbb00010100000000000000000000") // the NIC's own address
	if f := F3216.Final(a); f != final {
		t.Errorf("Final = %x; want %x", f, final)
	}
	for _, want := range []string{ // T0 → T1 → T0 → NIC
		"fcbbbb00001000220101000000000000",
		"fcbbbb00002201010000000000000000",
		"fcbbbb00010100000000000000000000",
	} {
		if !F3216.Shift(&a) || a != addr(t, want) {
			t.Fatalf("Shift → %x; want %s", a, want)
		}
	}
	if F3216.Shift(&a) || a != final {
		t.Errorf("Shift at the end of the container changed it: %x", a)
	}
}

func TestUSIDSetCSID(t *testing.T) {
	var a [16]byte
	for i := range 6 {
		F3216.SetCSID(&a, i, 0xFFFF)
	}
	F3216.SetCSID(&a, 2, 0x12345) // truncated to 0x2345
	F3216.SetCSID(&a, 6, 1)       // no such slot
	if a != addr(t, "00000000ffffffff2345ffffffffffff") {
		t.Errorf("SetCSID: %x", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		var x [16]byte
		F3216.SetCSID(&x, 1, 7)
		_ = F3216.Container(x, 1, 2, 3, 4, 5, 6)
		F3216.Shift(&x)
		_ = F3216.Final(x)
	}); a != 0 {
		t.Errorf("%v allocs", a)
	}
}

func TestUSIDOtherFormats(t *testing.T) {
	block := addr(t, "fcbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
	// 40-bit block, 16-bit CSIDs: 5 slots and 8 spare bits.
	f := USIDFormat{BlockBits: 40, CSIDBits: 16}
	a := f.Container(block, 1, 2, 3, 4, 5, 6)
	if a != addr(t, "fcbbbbbbbb0001000200030004000500") || f.Slots() != 5 {
		t.Errorf("F4016 container %x", a)
	}
	if fin := f.Final(a); fin != addr(t, "fcbbbbbbbb0005000000000000000000") {
		t.Errorf("F4016 Final %x", fin)
	}
	// 32-bit CSIDs.
	g := USIDFormat{BlockBits: 32, CSIDBits: 32}
	a = g.Container(block, 0xAABBCCDD, 0x11223344)
	if a != addr(t, "fcbbbbbbaabbccdd1122334400000000") || g.Active(a) != 0xAABBCCDD {
		t.Errorf("F3232 container %x", a)
	}
	for _, bad := range []USIDFormat{{32, 0}, {32, 33}, {-1, 16}, {120, 16}, {128, 1}} {
		x := a
		if bad.Valid() || bad.Slots() != 0 || bad.Shift(&x) || x != a || bad.Final(a) != a ||
			bad.Container(block, 1) != ([16]byte{}) || bad.Node(a) != ([16]byte{}) || bad.Active(a) != 0 {
			t.Errorf("invalid format %+v misbehaves", bad)
		}
		bad.SetCSID(&x, 0, 1)
		if x != a {
			t.Errorf("invalid format %+v: SetCSID changed the address", bad)
		}
	}
}

// Reference model: bit i of a, bit 0 being the MSB of byte 0.
func bitOf(a [16]byte, i int) byte { return a[i/8] >> (7 - i%8) & 1 }

func withBit(a [16]byte, i int, v byte) [16]byte {
	a[i/8] = a[i/8]&^(1<<(7-i%8)) | v<<(7-i%8)
	return a
}

// refShift is RFC 9800's End with NEXT-C-SID, bit by bit.
func refShift(f USIDFormat, a [16]byte) ([16]byte, bool) {
	b, c := f.BlockBits, f.CSIDBits
	arg := false
	for i := b + c; i < 128; i++ {
		arg = arg || bitOf(a, i) != 0
	}
	if !arg {
		return a, false
	}
	out := a
	for i := b; i < 128; i++ {
		v := byte(0)
		if i+c < 128 {
			v = bitOf(a, i+c)
		}
		out = withBit(out, i, v)
	}
	return out, true
}

func refCSID(f USIDFormat, a [16]byte, k int) uint32 {
	var v uint32
	for i := range f.CSIDBits {
		v = v<<1 | uint32(bitOf(a, f.BlockBits+k*f.CSIDBits+i))
	}
	return v
}

func checkUSID(t *testing.T, f USIDFormat, a [16]byte) {
	t.Helper()
	x := a
	more := f.Shift(&x)
	if want, wantMore := refShift(f, a); x != want || more != wantMore {
		t.Fatalf("%+v Shift(%x) = %x, %v; want %x, %v", f, a, x, more, want, wantMore)
	}
	fin := a
	for f.Shift(&fin) {
	}
	if got := f.Final(a); got != fin || f.Final(fin) != fin {
		t.Fatalf("%+v Final(%x) = %x; want %x", f, a, got, fin)
	}
	csids := make([]uint32, f.Slots())
	for k := range csids {
		csids[k] = f.CSID(a, k)
		if want := refCSID(f, a, k); csids[k] != want {
			t.Fatalf("%+v CSID(%x, %d) = %#x; want %#x", f, a, k, csids[k], want)
		}
	}
	// Rebuilding from block and CSIDs gives a with the spare bits cleared.
	want := a
	for i := f.BlockBits + f.Slots()*f.CSIDBits; i < 128; i++ {
		want = withBit(want, i, 0)
	}
	if got := f.Container(a, csids...); got != want {
		t.Fatalf("%+v Container(%x…) = %x; want %x", f, a, got, want)
	}
	node := f.Node(a)
	for i := range 128 {
		if w := bitOf(a, i) * b2u8(i < f.BlockBits+f.CSIDBits); bitOf(node, i) != w {
			t.Fatalf("%+v Node(%x) = %x", f, a, node)
		}
	}
}

func b2u8(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func TestUSIDReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		f := USIDFormat{BlockBits: r.IntN(97), CSIDBits: 1 + r.IntN(32)}
		if !f.Valid() {
			continue
		}
		var a [16]byte
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		// Often clear a tail, so containers end early.
		for i := 128 - r.IntN(128-f.BlockBits); i < 128; i++ {
			a = withBit(a, i, 0)
		}
		checkUSID(t, f, a)
	}
}

func FuzzUSID(f *testing.F) {
	block := [16]byte{0xfc, 0xbb}
	c := F3216.Container(block, 0x20, 0x10, 0x22)
	f.Add(uint8(32), uint8(16), c[:])
	f.Add(uint8(40), uint8(16), c[:])
	f.Add(uint8(0), uint8(1), c[:])
	f.Fuzz(func(t *testing.T, blockBits, csidBits uint8, b []byte) {
		var a [16]byte
		copy(a[:], b)
		fm := USIDFormat{BlockBits: int(blockBits) - 2, CSIDBits: int(csidBits) % 40}
		if !fm.Valid() {
			x := a
			if fm.Shift(&x) || x != a || fm.Final(a) != a || fm.Slots() != 0 {
				t.Fatal("invalid format changed an address")
			}
			return
		}
		checkUSID(t, fm, a)
	})
}
