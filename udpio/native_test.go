package udpio_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/fabric"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/udpio"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// nativeSide is one end of a native-framing transfer.
type nativeSide struct {
	d     *udpio.Driver
	bind  *udpio.NativeBind
	ports []netip.Addr
	qp    *mrc.QP
	mr    verbs.MR
	buf   []byte

	mu       sync.Mutex
	writes   int
	imms     int
	qpErr    error
	sentData map[uint32][][]byte // PSN -> every transmission of it the core sent, normalised (see normalise)
	rxData   map[uint32][]byte   // PSN -> the datagram the bind rebuilt, normalised
}

// normalise returns the part of a core datagram from the IPv6 header that
// carries UDP on, with the hop limit zeroed (the routers of an inline-uSID
// path decrement it) and the destination resolved to the final one (they
// shift its uSIDs): what a receiver's kernel must deliver unchanged.
func normalise(pkt []byte, encap mrc.Encap) (psn uint32, out []byte) {
	if pkt[6] == wire.ProtoIPv6 {
		pkt = pkt[wire.IPv6Len:]
	}
	out = append([]byte(nil), pkt...)
	out[7] = 0
	if encap == mrc.EncapUSID {
		dst := wire.F3216.Final([16]byte(out[24:40]))
		copy(out[24:40], dst[:])
	}
	return binary.BigEndian.Uint32(out[wire.IPv6Len+wire.UDPLen+8:]) & wire.PSNMask, out
}

// newNativeSide opens a NativeBind for ports inside namespace ns ("" for
// the current one) and starts a driver.
func newNativeSide(t *testing.T, ns string, ports []netip.Addr, encap mrc.Encap, seed uint64, size int) *nativeSide {
	t.Helper()
	s := &nativeSide{ports: ports, buf: make([]byte, size), sentData: map[uint32][][]byte{}, rxData: map[uint32][]byte{}}
	b, err := udpio.NewNativeBind(udpio.NativeConfig{Planes: ports})
	if err != nil {
		t.Fatal(err)
	}
	s.bind = b
	opt := udpio.Options{
		OnEvent: func(now mtime.Time, ep *mrc.Endpoint, ev verbs.Event) {
			s.mu.Lock()
			defer s.mu.Unlock()
			switch ev.Kind {
			case verbs.EventWriteDone:
				if ev.Err != nil {
					s.qpErr = ev.Err
				}
				s.writes++
			case verbs.EventRecvImm:
				s.imms++
				ep.QP(ev.QPN).PostRecv(ev.WRID + 1)
			case verbs.EventQPError:
				s.qpErr = ev.Err
			}
		},
		// Keep the first data packets the core sends, and the first the
		// bind rebuilds, to compare them.
		Tap: func(tx verbs.Transmit, pkt []byte) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if tx.Kind != verbs.KindData {
				return
			}
			psn, n := normalise(pkt, encap)
			if _, ok := s.sentData[psn]; ok || len(s.sentData) < 256 {
				s.sentData[psn] = append(s.sentData[psn], n)
			}
		},
		RxTap: func(plane int, pkt []byte, wireLen int) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.rxData) >= 256 || len(pkt) < wire.IPv6Len+wire.UDPLen+wire.BTHLen || !wire.Opcode(pkt[wire.IPv6Len+wire.UDPLen]).IsData() {
				return
			}
			psn, n := normalise(pkt, encap)
			if _, ok := s.rxData[psn]; !ok {
				s.rxData[psn] = n
			}
		},
	}
	cfg := mrc.Config{Ports: ports, Encap: encap, Seed: seed, BaseRTT: 200 * time.Microsecond, LossTimeout: 20 * time.Millisecond}
	open := func() error {
		var err error
		s.d, err = udpio.New(b, cfg, opt)
		return err
	}
	if ns != "" {
		err = fabric.InNetns(ns, open)
	} else {
		err = open()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.d.Close() })
	err = s.d.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
		var err error
		if s.mr, err = ep.RegisterMemory(s.buf, verbs.AccessRemoteWrite); err != nil {
			return err
		}
		if s.qp, err = ep.CreateQP(); err != nil {
			return err
		}
		return s.qp.Init(now, mrc.InitAttr{EVs: mrc.EVProfile{ActivePerPlane: 8, PathsPerPlane: 2}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connectNative introduces a and b, with paths when the encapsulation
// needs them, and brings both QPs to RTS.
func connectNative(t *testing.T, a, b *nativeSide, pathsA, pathsB *udpio.PathTable) {
	t.Helper()
	for _, x := range []struct {
		s, o  *nativeSide
		paths *udpio.PathTable
	}{{a, b, pathsA}, {b, a, pathsB}} {
		peer := udpio.Peer{Ports: x.o.ports}
		for _, p := range x.o.ports {
			peer.Sockets = append(peer.Sockets, netip.AddrPortFrom(p, wire.UDPPortRoCEv2))
		}
		if err := x.s.d.AddPeer(peer); err != nil {
			t.Fatal(err)
		}
		rtr := mrc.RTRAttr{RemoteQPN: x.o.qp.QPN(), Remote: x.o.ports}
		if x.paths != nil {
			f, _, err := x.paths.PathFunc(x.o.ports)
			if err != nil {
				t.Fatal(err)
			}
			rtr.Paths = f
		}
		err := x.s.d.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
			if err := x.s.qp.ReadyToReceive(now, rtr); err != nil {
				return err
			}
			for i := range 64 {
				x.s.qp.PostRecv(uint64(i))
			}
			return x.s.qp.ReadyToSend(now, mrc.RTSAttr{TimeoutExp: 14, RetryExp: mrc.RetryForever})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// transferNative writes a's buffer into b's and checks it arrived
// byte-exact.
func transferNative(t *testing.T, a, b *nativeSide) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 12))
	for i := range a.buf {
		a.buf[i] = byte(r.Uint32())
	}
	const chunk = 256 << 10
	n := 0
	err := a.d.Do(func(now mtime.Time, ep *mrc.Endpoint) error {
		for off := 0; off < len(a.buf); off += chunk {
			l := min(chunk, len(a.buf)-off)
			if err := a.qp.PostWrite(now, verbs.WriteRequest{ID: uint64(n), Local: a.mr, LocalOffset: uint64(off), Remote: b.mr,
				RemoteOffset: uint64(off), Length: uint64(l), WithImm: true, Imm: uint32(n)}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		a.mu.Lock()
		w, e := a.writes, a.qpErr
		a.mu.Unlock()
		b.mu.Lock()
		im := b.imms
		b.mu.Unlock()
		if e != nil {
			t.Fatalf("QP error: %v", e)
		}
		if w == n && im == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d/%d writes done, %d imms; bind stats a %+v b %+v (last send error %v)", w, n, im, a.bind.Stats(), b.bind.Stats(), a.bind.LastSendError())
		}
		time.Sleep(2 * time.Millisecond)
	}
	var same bool
	b.d.Do(func(mtime.Time, *mrc.Endpoint) error { same = bytes.Equal(a.buf, b.buf); return nil })
	if !same {
		t.Fatal("destination buffer differs from the source")
	}
}

// TestNativeFabric runs two in-process drivers with native framing across
// the emulated fabric (Linux SRv6 routers, End.DT6 at the hosts), in
// SRv6 encapsulation and inline uSID, and checks what the receiving bind
// rebuilds: every received datagram of the packets the sender recorded
// must equal, byte for byte from the header that carries UDP on, what the
// sender's core wrote (the core's checksum and ICRC checks then pass by
// construction).
func TestNativeFabric(t *testing.T) {
	if err := fabric.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	for _, tc := range []struct {
		name  string
		encap mrc.Encap
		fab   string
	}{{"srv6", mrc.EncapSRv6, fabric.EncapSRv6}, {"usid", mrc.EncapUSID, fabric.EncapUSID}} {
		t.Run(tc.name, func(t *testing.T) {
			goroutineLeakCheck(t)
			f, err := fabric.Build(fabric.Config{Encap: tc.fab, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := f.Close(); err != nil {
					t.Error(err)
				}
			})
			pathTable := func(h int) *udpio.PathTable {
				pt, err := udpio.ParsePathTable(strings.NewReader(f.PathTable(h)), fmt.Sprintf("h%d.paths", h))
				if err != nil {
					t.Fatal(err)
				}
				return pt
			}
			a := newNativeSide(t, f.Node("h0").NS, f.PortAddrs(0), tc.encap, 1, 4<<20)
			b := newNativeSide(t, f.Node("h1").NS, f.PortAddrs(1), tc.encap, 2, 4<<20)
			connectNative(t, a, b, pathTable(0), pathTable(1))
			transferNative(t, a, b)
			checkRebuilt(t, a, b)
			sa, sb := a.d.Stats(), b.d.Stats()
			t.Logf("a: sent %v, received %v; b: sent %v, received %v; binds a %+v b %+v", sa.TxPackets, sa.RxPackets, sb.TxPackets, sb.RxPackets, a.bind.Stats(), b.bind.Stats())
			if sa.TxPackets[0] == 0 || sa.TxPackets[1] == 0 {
				t.Errorf("a plane unused: %v", sa.TxPackets)
			}
		})
	}
}

// checkRebuilt compares the packets b's bind rebuilt, which b's tap
// recorded, with what a's core sent.
func checkRebuilt(t *testing.T, a, b *nativeSide) {
	t.Helper()
	a.mu.Lock()
	sent := a.sentData
	a.mu.Unlock()
	b.mu.Lock()
	got := b.rxData
	b.mu.Unlock()
	n := 0
	for psn, tries := range sent {
		g, ok := got[psn]
		if !ok {
			continue // lost, or not among the first received
		}
		n++
		// The first copy received may be a retransmission (another
		// plane, the retransmission DSCP): it must equal one of them.
		if !slices.ContainsFunc(tries, func(want []byte) bool { return bytes.Equal(g, want) }) {
			want := tries[0]
			t.Errorf("PSN %d: rebuilt datagram differs from the %d sent:\n got %x\nwant %x (the first)", psn, len(tries), g[:min(len(g), 64)], want[:min(len(want), 64)])
		}
	}
	if n == 0 {
		t.Errorf("no recorded packet to compare (sent %d, received %d)", len(sent), len(got))
	}
	t.Logf("%d rebuilt datagrams equal to those sent, byte for byte", n)
}

// TestNativePlainLoopback runs native framing without encapsulation
// between two addresses of one namespace's loopback: raw IPv6 out, the
// kernel's local delivery in.
func TestNativePlainLoopback(t *testing.T) {
	if err := fabric.Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	goroutineLeakCheck(t)
	ns := fmt.Sprintf("%s-%d-native", fabric.DefaultPrefix, os.Getpid())
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run("-n", ns, "link", "set", "lo", "up")
	pa := []netip.Addr{netip.MustParseAddr("fd00:77::1"), netip.MustParseAddr("fd00:77::2")}
	pb := []netip.Addr{netip.MustParseAddr("fd00:77::3"), netip.MustParseAddr("fd00:77::4")}
	for _, p := range append(append([]netip.Addr(nil), pa...), pb...) {
		run("-n", ns, "addr", "add", p.String()+"/128", "dev", "lo", "nodad")
	}
	a := newNativeSide(t, ns, pa, mrc.EncapPlain, 1, 4<<20)
	b := newNativeSide(t, ns, pb, mrc.EncapPlain, 2, 4<<20)
	connectNative(t, a, b, nil, nil)
	transferNative(t, a, b)
	checkRebuilt(t, a, b)
}

// TestNativeErrors: bad configurations and a missing address fail with
// clear errors.
func TestNativeErrors(t *testing.T) {
	if _, err := udpio.NewNativeBind(udpio.NativeConfig{}); err == nil {
		t.Error("no planes: no error")
	}
	if _, err := udpio.NewNativeBind(udpio.NativeConfig{Planes: []netip.Addr{netip.MustParseAddr("10.0.0.1")}}); err == nil || !strings.Contains(err.Error(), "IPv6") {
		t.Errorf("IPv4 plane: %v", err)
	}
	err := udpio.CheckNative([]netip.Addr{netip.MustParseAddr("2001:db8::77")})
	if os.Geteuid() == 0 && (err == nil || !strings.Contains(err.Error(), "not on this host")) {
		t.Errorf("CheckNative of a foreign address: %v", err)
	}
	if os.Geteuid() != 0 && (err == nil || !strings.Contains(err.Error(), "CAP_NET_RAW")) {
		t.Errorf("CheckNative without privileges: %v", err)
	}
}

// TestPathTable reads a path table and maps EVs to its paths.
func TestPathTable(t *testing.T) {
	pt, err := udpio.ParsePathTable(strings.NewReader(`# two paths to one port, one to another
path fd00::2 fcbb:bb00:100:200:101:e01:: fcbb:bb00:100:201:101:e01::
path fd00::3 fcbb:bb00:1100:1200:1101:1e01::
`), "t")
	if err != nil {
		t.Fatal(err)
	}
	f, most, err := pt.PathFunc([]netip.Addr{netip.MustParseAddr("fd00::2"), netip.MustParseAddr("fd00::3")})
	if err != nil || most != 2 {
		t.Fatalf("PathFunc: %v, %d paths", err, most)
	}
	if got := netip.AddrFrom16(f(0, 1)); got.String() != "fcbb:bb00:100:201:101:e01::" {
		t.Errorf("plane 0 path 1: %v", got)
	}
	if got := netip.AddrFrom16(f(1, 7)); got.String() != "fcbb:bb00:1100:1200:1101:1e01::" {
		t.Errorf("plane 1 path 7: %v", got)
	}
	if _, _, err := pt.PathFunc([]netip.Addr{netip.MustParseAddr("fd00::9")}); err == nil {
		t.Error("no path: no error")
	}
	for _, bad := range []string{"", "route x y\n", "path fd00::1\n", "path 10.0.0.1 fcbb::\n", "path fd00::1 nonsense\n"} {
		if _, err := udpio.ParsePathTable(strings.NewReader(bad), "t"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
