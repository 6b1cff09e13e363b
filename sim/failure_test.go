package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/wire"
)

// tally counts the packets a tapped element received from a time on, by
// traffic class, and when the last of each class arrived.
type tally struct {
	from        Time
	n           [3]uint64
	last        [3]Time
	firstByFlow map[string]Time // data packets, by flowKey
	lastByFlow  map[string]Time
}

func (ty *tally) capture(c *Captured) {
	if c.Out || c.Time < ty.from {
		return
	}
	k := trafficClass(c.Data)
	ty.n[k]++
	ty.last[k] = max(ty.last[k], c.Time)
	if k == classData {
		k := flowKey(c.Data)
		if _, ok := ty.firstByFlow[k]; !ok {
			ty.firstByFlow[k] = c.Time
		}
		ty.lastByFlow[k] = c.Time
	}
}

// TestBlackholeTraffic checks, for every transport, that everything a
// blackholed switch swallows counts as traffic into the failure: its
// data packets and its QPs' control packets (RoCE's ACKs, which ECMP may
// hash onto the dead switch while the data goes elsewhere), each with
// its bypass time, and the per-flow bypass times. The counts are checked
// against a capture at the switch itself.
func TestBlackholeTraffic(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 32, Planes: 2, T0Down: 8, T0Up: 4})
	const at = 10 * time.Microsecond
	for _, tr := range []Transport{MRC(), Oblivious(), RoCE(true), RoCE(false)} {
		ty := &tally{from: mtime.PicosOf(at), firstByFlow: map[string]Time{}, lastByFlow: map[string]Time{}}
		r := run(t, Config{Topology: tp, Workload: smallPerm(t, 32, 1<<20), Transport: tr, Seed: 2, StopAt: 20 * time.Millisecond,
			Taps: []string{"t1-p0-1"}, Capture: ty.capture,
			Failures: []Failure{{Kind: SwitchBlackhole, Element: "t1-p0-1", At: at}}})
		f := r.Failures[0]
		t.Logf("%s: %+v, drops %v", tr.Name, f, r.Drops)
		if f.DataPackets != ty.n[classData] || f.ControlPackets != ty.n[classControl] {
			t.Errorf("%s: %d data and %d control packets into the black hole, the switch received %d and %d",
				tr.Name, f.DataPackets, f.ControlPackets, ty.n[classData], ty.n[classControl])
		}
		if got := ty.n[classData] + ty.n[classControl] + ty.n[classOther]; got != r.Drops["blackhole"] {
			t.Errorf("%s: the switch received %d packets after the failure, dropped %d", tr.Name, got, r.Drops["blackhole"])
		}
		if ty.n[classControl] == 0 {
			t.Errorf("%s: no control packet crossed the black hole: the test does not exercise it", tr.Name)
		}
		bypass := func(last Time) int64 {
			if last == 0 {
				return 0
			}
			return (last - ty.from).Nanoseconds()
		}
		if f.BypassNs != bypass(ty.last[classData]) || f.ControlBypassNs != bypass(ty.last[classControl]) {
			t.Errorf("%s: bypass %d ns (data), %d ns (control); the switch saw the last at %d and %d ns",
				tr.Name, f.BypassNs, f.ControlBypassNs, bypass(ty.last[classData]), bypass(ty.last[classControl]))
		}
		var perFlow, react []int64
		for k, l := range ty.lastByFlow {
			perFlow = append(perFlow, bypass(l))
			react = append(react, (l - ty.firstByFlow[k]).Nanoseconds())
		}
		slices.Sort(perFlow)
		slices.Sort(react)
		want := BypassStats{}
		if n := len(perFlow); n > 0 {
			want = BypassStats{QPs: n, P50: percentile(perFlow, 0.5), P99: percentile(perFlow, 0.99), Max: perFlow[n-1],
				ReactP50: percentile(react, 0.5), ReactP99: percentile(react, 0.99), ReactMax: react[n-1]}
		}
		if *r.BypassQP != want || f.QPs != want.QPs || f.QPBypassP50Ns != want.P50 || f.QPBypassP99Ns != want.P99 {
			t.Errorf("%s: per-flow bypass %+v (failure: %d QPs, p50 %d, p99 %d), the capture says %+v",
				tr.Name, *r.BypassQP, f.QPs, f.QPBypassP50Ns, f.QPBypassP99Ns, want)
		}
	}
}

// TestPerFlowBypass checks the per-flow bypass distribution of link
// failures against a capture at the failed links' far ends: the flows
// that sent data into them, and when each sent its last.
func TestPerFlowBypass(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 32, Planes: 2, T0Down: 8, T0Up: 4})
	wl, err := workload.AllToAll(32, 64<<10, true)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 5,
		Failures: []Failure{{Kind: LinkDown, Element: "random:t0-t1", Count: 3, At: 5 * time.Microsecond}}})
	checkComplete(t, r, wl)
	var sum int
	for _, f := range r.Failures {
		if f.DataPackets > 0 && (f.QPs == 0 || f.QPBypassP50Ns > f.QPBypassP99Ns || f.QPBypassP99Ns > f.BypassNs) {
			t.Errorf("%+v: per-flow bypass out of order", f)
		}
		if uint64(f.QPs) > f.DataPackets {
			t.Errorf("%+v: more flows than data packets", f)
		}
		sum += f.QPs
	}
	b := r.BypassQP
	if b == nil || b.QPs != sum || sum == 0 || b.Max != *r.BypassNs || b.P50 > b.P99 || b.P99 > b.Max ||
		b.ReactP50 > b.ReactP99 || b.ReactP99 > b.ReactMax || b.ReactMax > b.Max || b.ReactP50 > b.P50 {
		t.Errorf("bypass_qp_ns %+v over %d (failure, flow) pairs, worst bypass %d", b, sum, *r.BypassNs)
	}
	t.Logf("per-flow bypass %+v, worst %d ns", *b, *r.BypassNs)
}

// flowKey names the flow of data packet pkt: the addresses of its
// innermost IPv6 header (the one before UDP) and its destination QP.
func flowKey(pkt []byte) string {
	ip := 0
	for pkt[ip+6] == wire.ProtoIPv6 {
		ip += wire.IPv6Len
	}
	return fmt.Sprint(pkt[ip+8:ip+40], destQP(pkt))
}

// TestLocalRepair checks that an ECMP switch stops using its own dead
// link after the local-repair delay, long before the fabric reconverges:
// a T0 whose uplink fails rehashes its flows onto its other uplinks. The
// T1 at the other end has no other way down to that T0, so the remote
// T0s' traffic through it goes on into the dead link until
// reconvergence.
func TestLocalRepair(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, T0Down: 4, T0Up: 4})
	const at, repair, reconv = 20 * time.Microsecond, 100 * time.Microsecond, 600 * time.Microsecond
	for _, tr := range []Transport{SinglePath(), RoCE(true)} {
		// Flows from under t0-0 only: every packet towards the dead link
		// comes from t0-0, which repairs locally.
		var fs []workload.Flow
		for src := range 4 {
			for d := range 3 {
				fs = append(fs, workload.Flow{Src: src, Dst: 4 + 4*d + src, Size: 1 << 20})
			}
		}
		wl := flows(fs...)
		cfg := Config{Topology: tp, Workload: wl, Transport: tr, Seed: 3, Reconvergence: reconv, LocalRepair: repair,
			Failures: []Failure{{Kind: LinkDown, Element: "t0-0/t1-1", At: at}}}
		r := run(t, cfg)
		checkComplete(t, r, wl)
		f := r.Failures[0]
		t.Logf("%s: %+v, completion %d ns", tr.Name, f, r.CompletionNs)
		if f.DataPackets == 0 {
			t.Fatalf("%s: no data went into the dead link: the test does not exercise repair", tr.Name)
		}
		if f.BypassNs > repair.Nanoseconds() || f.BypassNs < repair.Nanoseconds()/2 {
			t.Errorf("%s: bypass %d ns, want just under the %v local repair", tr.Name, f.BypassNs, repair)
		}

		// Towards t0-0 the T1 has no other port: it waits for the fabric.
		for i := range fs {
			fs[i].Src, fs[i].Dst = fs[i].Dst, fs[i].Src
		}
		r = run(t, Config{Topology: tp, Workload: flows(fs...), Transport: tr, Seed: 3, Reconvergence: reconv, LocalRepair: repair,
			Failures: cfg.Failures})
		f = r.Failures[0]
		if f.DataPackets == 0 || f.BypassNs <= repair.Nanoseconds() || f.BypassNs > reconv.Nanoseconds() {
			t.Errorf("%s, towards t0-0: bypass %d ns (%d data packets), want between the %v local repair and the %v reconvergence",
				tr.Name, f.BypassNs, f.DataPackets, repair, reconv)
		}
	}
	tp2 := clos2(t, topo.Clos2Config{Hosts: 16, T0Down: 4, T0Up: 4})
	if _, err := New(Config{Topology: tp2, Workload: smallPerm(t, 16, 1000), Transport: RoCE(true), Reconvergence: time.Millisecond,
		LocalRepair: 2 * time.Millisecond}); err == nil || !strings.Contains(err.Error(), "local_repair") {
		t.Errorf("local repair longer than reconvergence: %v", err)
	}
}

// TestLocalRepairDebounce checks which of its own ports a switch leaves
// out of its ECMP groups: those whose link has been down for the whole
// local-repair delay, and no longer once the link is back up.
func TestLocalRepairDebounce(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, T0Down: 4, T0Up: 4})
	us := func(n int64) Time { return Time(n) * 1_000_000 }
	w, err := New(Config{Topology: tp, Workload: smallPerm(t, 16, 1<<10), Transport: RoCE(true), Seed: 1,
		Reconvergence: time.Millisecond, LocalRepair: 100 * time.Microsecond,
		Failures: []Failure{
			{Kind: LinkDown, Element: "t0-0/t1-1", At: 20 * time.Microsecond, Until: 70 * time.Microsecond},
			{Kind: LinkDown, Element: "t0-0/t1-2", At: 20 * time.Microsecond, Until: 200 * time.Microsecond},
		}})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := tp.Find("t0-0")
	if err != nil {
		t.Fatal(err)
	}
	s := &tp.Switches[sw.ID]
	portTo := func(link string) int {
		e, err := tp.Find(link)
		if err != nil {
			t.Fatal(err)
		}
		for p := range s.Ports {
			if int(tp.SwitchPortLink[s.PortBase+p]) == e.ID {
				return p
			}
		}
		t.Fatalf("t0-0 has no port on %s", link)
		return -1
	}
	short, long := portTo("t0-0/t1-1"), portTo("t0-0/t1-2")
	ports := []int{short, long, portTo("t0-0/t1-0"), portTo("t0-0/t1-3")}
	for _, c := range []struct {
		now  Time
		want []int
	}{
		{us(50), ports},  // both down for less than the delay
		{us(119), ports}, // not yet
		{us(121), slices.Delete(slices.Clone(ports), 1, 2)}, // the long one has been down 101 µs; the short one was back at 70
		{us(201), ports}, // the long one is back up
	} {
		if got := w.repairedPorts(sw.ID, ports, c.now); !slices.Equal(got, c.want) {
			t.Errorf("at %d µs: ports %v, want %v (short %d, long %d)", c.now/1_000_000, got, c.want, short, long)
		}
	}
	// A group whose every port is down keeps them.
	if got := w.repairedPorts(sw.ID, []int{long}, us(150)); !slices.Equal(got, []int{long}) {
		t.Errorf("a group of one dead port became %v", got)
	}
}
