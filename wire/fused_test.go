package wire

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// sumCRCRef is what sumCRC must return: copy, sum and crcRest one after
// the other.
func sumCRCRef(dst []byte, s uint64, crc uint32, b []byte) (uint64, uint32) {
	copy(dst, b)
	return sum(s, b), crc32.Update(crc, crc32.IEEETable, b)
}

// withFused runs f with the fused loop on and, where the CPU has it, off.
func withFused(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	t.Run("portable", func(t *testing.T) { setFused(false); defer setFused(true); f(t) })
	if hasFused || hasCLMUL {
		t.Run("fused", f)
	}
	if !hasFused {
		t.Log("this CPU has no AVX-512 carry-less multiply: the fused loop did not run")
	}
}

func TestSumCRC(t *testing.T) {
	withFused(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(17, 1))
		src := make([]byte, 3*foldBlock*8+64)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		for _, n := range []int{0, 1, 2, 255, 256, 257, 511, 512, 768, 4096, 4097, 4160, 6000} {
			for _, off := range []int{0, 2, 6, 13} {
				for _, dst := range []bool{false, true} {
					b := src[off : off+n]
					s0, c0 := r.Uint64()>>8, r.Uint32()
					var got, want []byte
					if dst {
						got, want = make([]byte, n), make([]byte, n)
					}
					gs, gc := sumCRC(got, s0, c0, b)
					ws, wc := sumCRCRef(want, s0, c0, b)
					if fold(gs) != fold(ws) || gc != wc || !bytes.Equal(got, want) {
						t.Errorf("n %d off %d copy %v: sum %#x crc %#x, want %#x %#x", n, off, dst, fold(gs), gc, fold(ws), wc)
					}
				}
			}
		}
	})
}

// TestCRCShort: crcShort is crc32.Update for every length up to 300 and
// any starting value.
func TestCRCShort(t *testing.T) {
	withFused(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		b := make([]byte, 300)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		for n := range len(b) {
			c := r.Uint32()
			if got, want := crcShort(c, b[:n]), crc32.Update(c, crc32.IEEETable, b[:n]); got != want {
				t.Errorf("%d bytes from %#x: %#x, want %#x", n, c, got, want)
			}
		}
	})
}

// BenchmarkSumCRC is one 4 KiB payload through both checks, verified in
// place ("check") and copied while summed ("copy"), fused and portable.
func BenchmarkSumCRC(b *testing.B) {
	src, dst := make([]byte, 4096), make([]byte, 4096)
	for _, fused := range []bool{false, true} {
		if fused && !fusedCRC {
			continue
		}
		name := map[bool]string{false: "portable", true: "fused"}[fused]
		for _, cp := range []bool{false, true} {
			d := []byte(nil)
			if cp {
				d = dst
			}
			b.Run(name+map[bool]string{false: "/check", true: "/copy"}[cp], func(b *testing.B) {
				setFused(fused)
				defer setFused(true)
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					sumCRC(d, 0, 0, src)
				}
			})
		}
	}
}

// verifyRef is what Verify must say of a complete datagram udp from src to
// final: UDPChecksum and ICRC, one after the other, as Verify computed
// them before they shared a pass.
func verifyRef(src, final [16]byte, udp []byte) error {
	switch {
	case UDPChecksum(src, final, udp) != binary.BigEndian.Uint16(udp[udpOffChecksum:]):
		return ErrChecksum
	case len(udp) < UDPLen+ICRCLen:
		return ErrICRC
	case ICRC(src, final, udp[:len(udp)-ICRCLen]) != binary.LittleEndian.Uint32(udp[len(udp)-ICRCLen:]):
		return ErrICRC
	}
	return nil
}

// TestFusedChecksMatchReference: for every data kind and encapsulation and
// payloads of 0 to 5,000 bytes (odd ones too), AppendPacket writes the UDP
// checksum and ICRC that UDPChecksum and ICRC compute, and Verify and
// VerifyInto of the packet with one byte changed anywhere after the IPv6
// header agree with those reference functions, error for error, with the
// fused loop and without; VerifyInto copies the payload when it says nil.
func TestFusedChecksMatchReference(t *testing.T) {
	withFused(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, k := range kinds {
			if !k.op.IsData() {
				continue
			}
			for _, e := range encapsulations {
				for range 12 {
					p, _ := testPacket(k, e)
					payload := make([]byte, r.IntN(5001))
					for i := range payload {
						payload[i] = byte(r.Uint32())
					}
					p.PayloadLen = len(payload)
					pkt := AppendPacket(nil, &p, payload)
					var d Packet
					if err := d.Decode(pkt); err != nil {
						t.Fatalf("%v %v %d bytes: %v", k, e, len(payload), err)
					}
					d.FinalDst = p.FinalDst // Decode cannot resolve an inline uSID container
					off := d.udpOffset()
					udp := pkt[off : off+int(d.UDP.Length)]
					if err := verifyRef(p.IP.Src, p.Final(), udp); err != nil {
						t.Fatalf("%v %v %d bytes: the packet as written fails the reference check: %v", k, e, len(payload), err)
					}
					dst := make([]byte, len(payload))
					if err := d.VerifyInto(pkt, dst); err != nil || !bytes.Equal(dst, payload) {
						t.Fatalf("%v %v %d bytes: VerifyInto: %v, payload copied: %v", k, e, len(payload), err, bytes.Equal(dst, payload))
					}
					for range 8 {
						bad := bytes.Clone(pkt)
						i := off + r.IntN(len(udp))
						bad[i] ^= byte(1 + r.IntN(255))
						want := verifyRef(p.IP.Src, p.Final(), bad[off:off+int(d.UDP.Length)])
						if got := d.Verify(bad); got != want {
							t.Errorf("%v %v %d bytes, byte %d changed: Verify says %v, the reference %v", k, e, len(payload), i-off, got, want)
						}
						clear(dst)
						bp := bad[len(pkt)-len(payload)-pad(len(payload))-ICRCLen:][:len(payload)]
						if got := d.VerifyInto(bad, dst); got != want || got == nil && !bytes.Equal(dst, bp) {
							t.Errorf("%v %v %d bytes, byte %d changed: VerifyInto says %v, the reference %v", k, e, len(payload), i-off, got, want)
						}
					}
				}
			}
		}
	})
}

// FuzzSumCRC: sumCRC agrees with copy, sum and crc32, and crcShort with
// crc32, for any input, starting state and offset.
func FuzzSumCRC(f *testing.F) {
	f.Add(make([]byte, 600), uint64(0), uint32(0), uint8(0))
	f.Add(make([]byte, 4096), uint64(1<<40), uint32(0xdeadbeef), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, s uint64, crc uint32, off uint8) {
		if int(off)*2 > len(b) {
			return
		}
		b = b[2*int(off):] // an even offset, as sum requires
		s >>= 8            // room for the sums of any fuzz input
		dst, ref := make([]byte, len(b)), make([]byte, len(b))
		gs, gc := sumCRC(dst, s, crc, b)
		ws, wc := sumCRCRef(ref, s, crc, b)
		if fold(gs) != fold(ws) || gc != wc || !bytes.Equal(dst, ref) {
			t.Fatalf("%d bytes: sum %#x crc %#x, want %#x %#x", len(b), fold(gs), gc, fold(ws), wc)
		}
		if got := crcShort(crc, b); got != wc {
			t.Fatalf("%d bytes: crcShort %#x, want %#x", len(b), got, wc)
		}
	})
}

// setFused turns the carry-less multiply paths on or off (tests of both):
// the fused loop only where the CPU has it, and the 16-byte steps with it.
func setFused(on bool) { fusedCRC, clmulCRC = on && hasFused, on && hasCLMUL }

var hasFused, hasCLMUL = fusedCRC, clmulCRC
