package ib

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/roce"
	"github.com/openmrc/mrc/verbs"
)

const fuzzMTU = 256

// fuzzPair is two HCAs with CCA and a reorder window, A writing three
// packets into B's real memory, the second of them already delivered
// (held ahead of the gap).
type fuzzPair struct {
	a, b   *Endpoint
	qb     *roce.QP
	mem    []byte // B's region inside guard bytes
	buf    []byte
	data   [][]byte // A's data packets
	region []byte
}

const guard = 64

func newFuzzPair(t testing.TB) *fuzzPair {
	x := &fuzzPair{buf: make([]byte, MaxPacket(fuzzMTU)+8)}
	mk := func(h int) *Endpoint {
		ep, err := NewEndpoint(Config{Ports: []netip.Addr{hostAddr(h)}, MTU: fuzzMTU, Seed: 5, SkipICRC: true, CC: CCCCA, ReorderWindow: 8})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	x.a, x.b = mk(0), mk(1)
	qa, _ := x.a.CreateQP()
	x.qb, _ = x.b.CreateQP()
	if err := x.a.Connect(0, qa, 0, hostAddr(1), x.qb.QPN()); err != nil {
		t.Fatal(err)
	}
	if err := x.b.Connect(0, x.qb, 0, hostAddr(0), qa.QPN()); err != nil {
		t.Fatal(err)
	}
	x.mem = bytes.Repeat([]byte{0xA5}, 3*fuzzMTU+2*guard)
	x.region = x.mem[guard : guard+3*fuzzMTU]
	dst, _ := x.b.RegisterMemory(x.region)
	src := make([]byte, 3*fuzzMTU)
	srcMR, _ := x.a.RegisterMemory(src)
	x.qb.PostRecv(1)
	if err := qa.PostWrite(0, verbs.WriteRequest{ID: 1, Local: srcMR, Remote: dst, Length: 3 * fuzzMTU, WithImm: true}); err != nil {
		t.Fatal(err)
	}
	for {
		tx, ok := x.a.PollTransmit(1, 1, x.buf)
		if !ok {
			break
		}
		x.data = append(x.data, append([]byte(nil), x.buf[:tx.Len]...))
	}
	if len(x.data) != 3 {
		t.Fatalf("%d data packets", len(x.data))
	}
	x.b.HandleDatagram(2, 0, x.data[1], len(x.data[1]))
	return x
}

// FuzzHandleDatagram feeds arbitrary bytes to both HCAs of a pair whose
// responder holds a packet ahead of a gap, as a whole datagram or a
// phantom one (extra > 0), then lets them answer and time out. Nothing
// may panic, memory outside B's region must not change, and B may take
// at most the two packets the gap and the held one make.
func FuzzHandleDatagram(f *testing.F) {
	x := newFuzzPair(f)
	for _, p := range x.data {
		f.Add(p, uint16(0))
		f.Add(p, uint16(fuzzMTU))
	}
	f.Fuzz(func(t *testing.T, pkt []byte, extra uint16) {
		y := newFuzzPair(t)
		for _, ep := range []*Endpoint{y.b, y.a} {
			ep.HandleDatagram(5, 0, pkt, len(pkt)+int(extra))
			for now := mtime.Time(6); now < 10; now++ {
				for {
					if _, ok := ep.PollTransmit(now, 1, y.buf); !ok {
						break
					}
				}
				for {
					if _, ok := ep.PollEvent(); !ok {
						break
					}
				}
			}
			ep.HandleTimeout(mtime.Time(1e9))
		}
		for i := range guard {
			if y.mem[i] != 0xA5 || y.mem[len(y.mem)-1-i] != 0xA5 {
				t.Fatal("guard bytes changed")
			}
		}
		if s := y.b.Stats(); s.DataReceived > 2 {
			t.Fatalf("%d packets taken", s.DataReceived)
		}
	})
}

// TestFuzzPairDrains: the fuzz pair's seed works as meant: the missing
// first packet makes B take it and the held second one.
func TestFuzzPairDrains(t *testing.T) {
	x := newFuzzPair(t)
	x.b.HandleDatagram(3, 0, x.data[0], len(x.data[0]))
	if s := x.b.Stats(); s.DataReceived != 2 || s.Reordered != 1 || s.NACKsSent != 0 {
		t.Fatalf("taken %d, held %d, NAKs %d", s.DataReceived, s.Reordered, s.NACKsSent)
	}
}
