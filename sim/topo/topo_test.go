package topo

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/openmrc/mrc/vswitch"
	"github.com/openmrc/mrc/wire"
)

func TestClos2Counts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the 131,072-GPU fabric")
	}
	tp, err := Clos2(Clos2Config{Hosts: 131072, Planes: 8, T0Down: 256, T0Up: 256})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tp.Switches); got != 6144 {
		t.Errorf("%d switches, want 6144 (paper §2)", got)
	}
	if got, want := len(tp.Links), 131072*8+8*512*256; got != want {
		t.Errorf("%d links, want %d", got, want)
	}
	if tp.PathsPerPlane() != 256 {
		t.Errorf("paths per plane %d", tp.PathsPerPlane())
	}
}

func TestClos2Errors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Clos2Config
		want string
	}{
		{Clos2Config{Hosts: 1, T0Down: 1, T0Up: 1}, "hosts"},
		{Clos2Config{Hosts: 10, T0Down: 4, T0Up: 2}, "not divisible by t0_down"},
		{Clos2Config{Hosts: 64, Radix: 8}, "radix 8 too small: each T1 needs 16 ports"},
		{Clos2Config{Hosts: 8, T0Down: 4, T0Up: 4, Radix: 6}, "radix 6 too small"},
		{Clos2Config{Hosts: 8, T0Down: 4, T0Up: 4, HostRate: -1}, "link speed"},
		{Clos2Config{Hosts: 8, T0Down: 4, T0Up: 4, Planes: 17}, "planes"},
		{Clos2Config{Hosts: 8, T0Down: 0, T0Up: 4}, "t0_down"},
		{Clos2Config{Hosts: 8, T0Down: 4, T0Up: 0}, "t0_up"},
		{Clos2Config{Hosts: 4096 * 2, T0Down: 1, T0Up: 1, Planes: 2}, "uSIDs"},
	} {
		_, err := Clos2(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := Clos3(Clos3Config{Hosts: 100, Radix: 8}); err == nil || !strings.Contains(err.Error(), "pod_size") {
		t.Errorf("clos3 with 100 hosts: %v", err)
	}
	if _, err := Clos3(Clos3Config{Hosts: 1024, T0Down: 8, T0Up: 8, PodSize: 64, T1Up: 8, Radix: 12}); err == nil {
		t.Error("clos3 radix too small accepted")
	}
}

// fabric builds a vswitch per switch with the SRv6 or ECMP routes.
func fabric(t *testing.T, tp *Topology, mode vswitch.Mode) []*vswitch.Switch {
	t.Helper()
	sws := make([]*vswitch.Switch, len(tp.Switches))
	for i, s := range tp.Switches {
		vs, err := vswitch.New(vswitch.Config{Ports: s.Ports, Mode: mode, Addr: tp.USIDAddr(s.USID), Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		sws[i] = vs
		if mode == vswitch.ModeSRv6 {
			tp.SRv6Routes(i, func(r Route) {
				if err := vs.AddRoute(r.Prefix, r.Bits, r.Ports...); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	if mode == vswitch.ModeECMP {
		tp.ECMPRoutes(-1, func(int) bool { return true }, func(sw int, r Route) {
			if err := sws[sw].AddRoute(r.Prefix, r.Bits, r.Ports...); err != nil {
				t.Fatal(err)
			}
		})
	}
	return sws
}

// walk forwards a packet with outer destination dst from host src's port
// plane through the switches and returns the host and port it reaches and
// the switches it crossed.
func walk(t *testing.T, tp *Topology, sws []*vswitch.Switch, src, plane int, dst [16]byte, ev uint32) (host, port int, path []int) {
	t.Helper()
	var p wire.Packet
	p.IP = wire.IPv6{NextHeader: wire.ProtoUDP, HopLimit: 64, Dst: dst, TrafficClass: 10 << 2}
	p.UDP = wire.UDP{DstPort: wire.UDPPortRoCEv2}
	p.SetEV(wire.EV(ev))
	p.BTH = wire.BTH{Opcode: wire.OpProbe}
	pkt := wire.AppendPacket(nil, &p, nil)
	node, in := tp.Links[tp.HostLink[src*tp.Planes+plane]].B, 0
	in = int(tp.Links[tp.HostLink[src*tp.Planes+plane]].BPort)
	for range 10 {
		si := int(node) - tp.Hosts
		path = append(path, si)
		out, drop := sws[si].Forward(pkt, in)
		if drop != vswitch.DropNone {
			t.Fatalf("dropped at %s: %v (dst %x)", tp.Name(node), drop, *wire.OuterDst(pkt))
		}
		l := int(tp.SwitchPortLink[tp.Switches[si].PortBase+out])
		next, nin := tp.Peer(l, node)
		if tp.IsHost(next) {
			return int(next), nin, path
		}
		node, in = next, nin
	}
	t.Fatal("packet loops")
	return 0, 0, nil
}

func TestSRv6PathsClos2(t *testing.T) {
	tp, err := Clos2(Clos2Config{Hosts: 32, Planes: 4, T0Down: 4, T0Up: 8})
	if err != nil {
		t.Fatal(err)
	}
	sws := fabric(t, tp, vswitch.ModeSRv6)
	for _, pair := range [][2]int{{0, 31}, {5, 6}, {3, 17}} {
		src, dst := pair[0], pair[1]
		paths := tp.Paths(src, dst)
		for plane := range tp.Planes {
			t1s := map[int]bool{}
			for k := range tp.PathsPerPlane() {
				ev := uint32(0xC0000000) | uint32(plane)<<12 | uint32(k)
				h, port, path := walk(t, tp, sws, src, plane, paths(plane, wire.EV(ev)), ev)
				if h != dst || port != plane {
					t.Fatalf("%d->%d plane %d EV path %d reached h%d port %d", src, dst, plane, k, h, port)
				}
				for _, si := range path {
					if tp.Switches[si].Plane != plane {
						t.Fatalf("path left plane %d", plane)
					}
					if tp.Switches[si].Tier == 1 {
						t1s[si] = true
						if tp.Switches[si].Index != k {
							t.Errorf("EV path %d crossed T1 %d", k, tp.Switches[si].Index)
						}
					}
				}
				if src/4 == dst/4 && len(path) != 1 {
					t.Errorf("T0-local path crossed %d switches", len(path))
				}
			}
			if src/4 != dst/4 && len(t1s) != tp.PathsPerPlane() {
				t.Errorf("plane %d: %d distinct T1s over %d EV paths", plane, len(t1s), tp.PathsPerPlane())
			}
		}
	}
}

func TestSRv6PathsClos3(t *testing.T) {
	tp, err := Clos3(Clos3Config{Hosts: 64, Radix: 8}) // k = 4: 4 pods of 16 hosts
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tp.Switches); n != 16+16+16 {
		t.Fatalf("%d switches", n)
	}
	sws := fabric(t, tp, vswitch.ModeSRv6)
	for _, pair := range [][2]int{{0, 63}, {0, 5}, {0, 1}} {
		paths := tp.Paths(pair[0], pair[1])
		seen := map[string]bool{}
		for k := range tp.PathsPerPlane() {
			ev := uint32(0xC0000000 | k)
			h, _, path := walk(t, tp, sws, pair[0], 0, paths(0, wire.EV(ev)), ev)
			if h != pair[1] {
				t.Fatalf("%v: EV %d reached h%d", pair, k, h)
			}
			seen[fmt.Sprint(path)] = true
		}
		want := map[[2]int]int{{0, 63}: 16, {0, 5}: 4, {0, 1}: 1}[pair]
		if len(seen) != want {
			t.Errorf("%v: %d distinct paths, want %d", pair, len(seen), want)
		}
	}
}

func TestECMPRoutesReachEveryHost(t *testing.T) {
	for _, tp := range []*Topology{
		must(Clos2(Clos2Config{Hosts: 16, Planes: 2, T0Down: 4, T0Up: 4})),
		must(Clos3(Clos3Config{Hosts: 64, Radix: 8})),
	} {
		sws := fabric(t, tp, vswitch.ModeECMP)
		for src := range tp.Hosts {
			for _, dst := range []int{(src + 1) % tp.Hosts, (src + tp.Hosts/2) % tp.Hosts, tp.Hosts - 1 - src} {
				if dst == src {
					continue
				}
				for plane := range tp.Planes {
					a := tp.HostAddr(dst, plane).As16()
					h, port, _ := walk(t, tp, sws, src, plane, a, uint32(src*7+dst))
					if h != dst || port != plane {
						t.Fatalf("%s: %d->%d plane %d reached h%d p%d", tp.Kind, src, dst, plane, h, port)
					}
				}
			}
		}
	}
}

func must(t *Topology, err error) *Topology {
	if err != nil {
		panic(err)
	}
	return t
}

func TestFindNames(t *testing.T) {
	tp := must(Clos2(Clos2Config{Hosts: 16, Planes: 2, T0Down: 4, T0Up: 4}))
	for _, tc := range []struct {
		name string
		kind ElementKind
	}{
		{"h3", ElemHost}, {"h3/p1", ElemHostPort}, {"t1-p1-2", ElemSwitch},
		{"t0-p0-1/t1-p0-3", ElemLink}, {"t0-p1-0/h2", ElemHostPort},
	} {
		e, err := tp.Find(tc.name)
		if err != nil || e.Kind != tc.kind {
			t.Errorf("Find(%q) = %+v, %v", tc.name, e, err)
		}
	}
	for _, bad := range []string{"h16", "t1-p2-0", "t3-p0-0", "t0-p0-0/t0-p0-1", "h1/p9", "x"} {
		if _, err := tp.Find(bad); err == nil {
			t.Errorf("Find(%q) succeeded", bad)
		}
	}
	e, _ := tp.Find("t0-p0-1/t1-p0-3")
	if got := tp.LinkName(e.ID); got != "t0-p0-1/t1-p0-3" {
		t.Errorf("LinkName = %q", got)
	}
}

func TestBaseRTT(t *testing.T) {
	tp := must(Clos2(Clos2Config{Hosts: 16, T0Down: 4, T0Up: 4}))
	// 4 hops of (data 4262 B + ack 178 B at 100 Gb/s + 2 µs): 4 × (340.96 + 14.24 + 2000) ns.
	got := tp.BaseRTT(4262, 178)
	if got.Nanoseconds() < 9420 || got.Nanoseconds() > 9422 {
		t.Errorf("base RTT %v", got)
	}
	// Host links 500 ns, fabric 1 µs, 200 ns switches: 2×(0.5+1) µs of
	// propagation and 3 switches each way, plus serialisation.
	tp = must(Clos2(Clos2Config{Hosts: 16, T0Down: 4, T0Up: 4, HostDelay: 500, FabricDelay: 1000, SwitchLatency: 200}))
	const data, ack = 4262 * 8 / 100.0, 178 * 8 / 100.0 // ns at 100 Gb/s
	if got, want := tp.BaseRTT(4262, 178).Nanoseconds(), int64(math.Ceil(6000+1200+4*data+4*ack)); got != want {
		t.Errorf("base RTT %d ns, want %d", got, want)
	}
	tp = must(Clos3(Clos3Config{Hosts: 64, Radix: 8, HostDelay: 100, FabricDelay: 1000}))
	if got, want := tp.BaseRTT(4262, 178).Nanoseconds(), int64(math.Ceil(2*(200+4000)+6*data+6*ack)); got != want {
		t.Errorf("three-tier base RTT %d ns, want %d", got, want)
	}
}
