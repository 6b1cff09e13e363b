package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/ib"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/vswitch"
)

func ibTransport(t testing.TB, name string) Transport {
	t.Helper()
	tr, err := LookupTransport(name)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func dropped(r *Result) uint64 {
	var n uint64
	for _, d := range r.Drops {
		n += d
	}
	return n
}

// TestIBIncastIsLossless: 32 senders into one host over a lossless
// fabric of credit-based links drop nothing, retransmit nothing and
// deliver every byte, at close to the receiver's line rate (its link is
// the only bottleneck, and credits keep it busy), while no switch queue
// holds more than its ingress ports' buffers: the credits, not a drop,
// stop the senders.
func TestIBIncastIsLossless(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 64, T0Down: 16, T0Up: 8})
	wl, err := workload.Incast(32, 1<<20, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ib", "ib-ar"} {
		w, r := runWorld(t, Config{Topology: tp, Workload: wl, Transport: ibTransport(t, name), Seed: 3})
		buf := w.creditBuffer()
		checkComplete(t, r, wl)
		t.Logf("%s: completion %d ns (ideal %d), %d drops, %d retransmits", name, r.CompletionNs, r.IdealNs, dropped(r), r.Retransmits)
		if dropped(r) != 0 || r.Retransmits != 0 || r.ECNMarks != 0 || r.QPErrors != 0 {
			t.Errorf("%s: %d drops (%v), %d retransmits, %d marks", name, dropped(r), r.Drops, r.Retransmits, r.ECNMarks)
		}
		if r.GoodputFractionOfIdeal < 0.9 {
			t.Errorf("%s: goodput %.2f of ideal, want the receiver's link busy (> 0.9)", name, r.GoodputFractionOfIdeal)
		}
		var most int64
		for i := range w.sws {
			vs := w.sws[i].vs
			for p := range vs.Ports() {
				most = max(most, vs.PortCounters(p).MaxBytes)
				if limit := int64((vs.Ports() - 1) * buf); vs.PortCounters(p).MaxBytes > limit {
					t.Errorf("%s: switch %d port %d queued %d bytes, more than its other ports' buffers (%d)", name, i, p, vs.PortCounters(p).MaxBytes, limit)
				}
			}
		}
		if most < int64(4*buf) {
			t.Errorf("%s: the deepest queue held %d bytes: no incast congestion to speak of", name, most)
		}
	}
}

// TestIBAdaptiveRoutingBeatsStatic: on a permutation over a leaf-spine
// of full bisection, static D-mod-k routing sends the flows of a T0
// whose destinations are equal modulo the T0's 16 uplinks through the
// same uplink (its downward paths never collide), and they share it for
// their whole life: the slowest flow takes at least the most flows any
// uplink carries times one flow's serialisation. Adaptive routing
// spreads every packet over the least-loaded uplink: its tail is near
// the ideal and well below static routing's.
func TestIBAdaptiveRoutingBeatsStatic(t *testing.T) {
	const hosts, perT0, size = 128, 16, 2 << 20
	tp := clos2(t, topo.Clos2Config{Hosts: hosts, T0Down: perT0, T0Up: perT0})
	wl := smallPerm(t, hosts, size)
	share := map[[2]int]int{} // (source T0, uplink) → flows
	most := 0
	for _, f := range wl.Flows {
		if f.Src/perT0 != f.Dst/perT0 {
			k := [2]int{f.Src / perT0, f.Dst % perT0}
			share[k]++
			most = max(most, share[k])
		}
	}
	serial := int64(size) * 8 * 1e9 / 100e9 // one flow at 100 Gb/s, ns
	var p99 [2]int64
	for i, name := range []string{"ib", "ib-ar"} {
		r := run(t, Config{Topology: tp, Workload: wl, Transport: ibTransport(t, name), Seed: 2})
		checkComplete(t, r, wl)
		p99[i] = r.FCT.P99
		t.Logf("%s: FCT p50 %d p99 %d max %d ns, completion %d (ideal %d), %d drops, %d retransmits", name,
			r.FCT.P50, r.FCT.P99, r.FCT.Max, r.CompletionNs, r.IdealNs, dropped(r), r.Retransmits)
		if dropped(r) != 0 || r.Retransmits != 0 {
			t.Errorf("%s: %d drops, %d retransmits on a lossless fabric", name, dropped(r), r.Retransmits)
		}
		if name == "ib" && r.FCT.Max < int64(most)*serial {
			t.Errorf("static: slowest flow %d ns, but %d flows share an uplink (%d ns each)", r.FCT.Max, most, serial)
		}
		if name == "ib-ar" && r.FCT.Max > r.IdealNs*3/2 {
			t.Errorf("adaptive: slowest flow %d ns, more than 1.5 × the ideal %d", r.FCT.Max, r.IdealNs)
		}
	}
	t.Logf("at most %d flows share an uplink under D-mod-k", most)
	if p99[1]*3 > p99[0]*2 {
		t.Errorf("FCT p99: adaptive %d ns, static %d ns; want adaptive at most 2/3 of static", p99[1], p99[0])
	}
}

// victimFabric is the congestion-spreading experiment: four T0s of four
// hosts under one T1; seven senders (three under T0 1, four under T0 2)
// send 4 MB each to host 0, whose link is the hot spot; from 20 µs,
// host 7 (under T0 1) sends 1 MB to host 12 (under T0 3). The victim
// shares only T0 1's uplink with three of the incast flows; its own path
// has room for 100 − 3·100/7 ≈ 57 Gb/s at max-min fairness.
func victimFabric(t *testing.T) (*topo.Topology, *workload.Workload) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, T0Down: 4, T0Up: 1})
	wl := &workload.Workload{Name: "incast-7to1+victim"}
	for _, s := range []int{4, 5, 6, 8, 9, 10, 11} {
		wl.Flows = append(wl.Flows, workload.Flow{ID: len(wl.Flows) + 1, Src: s, Dst: 0, Size: 4 << 20})
	}
	wl.Flows = append(wl.Flows, workload.Flow{ID: 8, Src: 7, Dst: 12, Size: 1 << 20, Start: 20_000_000, Tag: "victim"})
	return tp, wl
}

// victimGbps returns the victim flow's goodput in Gb/s.
func victimGbps(t *testing.T, r *Result) float64 {
	for _, f := range r.FlowResults {
		if f.Tag == "victim" {
			return float64(f.Size) * 8 / float64(f.FCTNs)
		}
	}
	t.Fatal("no victim")
	return 0
}

// TestIBCongestionSpreading: the known weakness of lossless fabrics and
// its cure. Without congestion control the incast fills host 0's port,
// then the buffers that feed it: the T1's, then T0 1's uplink, where
// the victim's packets wait behind incast packets that cannot move —
// head-of-line blocking spreads the hot spot to a flow that never
// crosses it, which gets far less than its fair 57 Gb/s. With IB's
// FECN/BECN congestion control the hot port (the root) marks, the
// incast senders slow down, the congestion tree drains and the victim
// gets most of its share back. Nothing is dropped either way.
func TestIBCongestionSpreading(t *testing.T) {
	tp, wl := victimFabric(t)
	fair := 100 - 3*100.0/7
	alone := &workload.Workload{Name: "victim alone", Flows: []workload.Flow{wl.Flows[7]}}
	alone.Flows[0].Start = 0
	rates := map[string]float64{}
	for _, tc := range []struct {
		name string
		tr   Transport
		wl   *workload.Workload
	}{
		{"alone", ibTransport(t, "ib"), alone},
		{"no CC", ibTransport(t, "ib"), wl},
		{"FECN/BECN", IB("ib-cca", vswitch.ModeDest, ib.Config{CC: ib.CCCCA}), wl},
	} {
		r := run(t, Config{Topology: tp, Workload: tc.wl, Transport: tc.tr, Seed: 1})
		checkComplete(t, r, tc.wl)
		rates[tc.name] = victimGbps(t, r)
		t.Logf("%s: victim %.1f Gb/s, completion %d ns, %d drops, %d ECN marks", tc.name, rates[tc.name], r.CompletionNs, dropped(r), r.ECNMarks)
		if dropped(r) != 0 {
			t.Errorf("%s: %d drops", tc.name, dropped(r))
		}
	}
	if rates["alone"] < 80 {
		t.Errorf("the victim alone gets %.1f Gb/s of a 100 Gb/s path", rates["alone"])
	}
	if rates["no CC"] > fair/2 {
		t.Errorf("without CC the victim gets %.1f Gb/s, want congestion spreading to cut it below half its fair %.0f", rates["no CC"], fair)
	}
	if rates["FECN/BECN"] < 2*rates["no CC"] || rates["FECN/BECN"] < fair/2 {
		t.Errorf("with FECN/BECN the victim gets %.1f Gb/s, want at least twice %.1f and half its fair %.0f", rates["FECN/BECN"], rates["no CC"], fair)
	}
}

// TestIBFailover: a T1 fails, or one T0–T1 link. Adaptive routing never
// again sends into a port that is down, so when the switch at the
// failure's near end has another way, each QP loses only what was in
// flight and resends it after one local ACK timeout: a failed T1, whose
// every neighbour sees its port go down, costs nothing more, and all
// completes before the fabric would reroute. A failed link also strands
// the far T1, which has no other way down to that T0: the other T0s keep
// choosing it (its queue looks empty) until SHIELD tells them (2 ms), so
// completion waits for that, not for routing. The static forwarding
// tables keep sending into the failure until the subnet manager's routes
// reconverge (here 4 ms), and the QPs' timers retry into it until then.
func TestIBFailover(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, T0Down: 4, T0Up: 4})
	wl := smallPerm(t, 16, 4<<20)
	const at, reconv = 20 * time.Microsecond, 4 * time.Millisecond
	reroute := DefaultReroute.Nanoseconds()
	cfg := ib.Config{TimeoutExp: 8} // 1.05 ms
	for _, fail := range []Failure{{Kind: SwitchDown, Element: "t1-1", At: at}, {Kind: LinkDown, Element: "t0-0/t1-1", At: at}} {
		for _, tr := range []Transport{IB("ib", vswitch.ModeDest, cfg), IB("ib-ar", vswitch.ModeAdaptive, cfg)} {
			r := run(t, Config{Topology: tp, Workload: wl, Transport: tr, Seed: 8, Reconvergence: reconv, LocalRepair: reconv,
				Failures: []Failure{fail}})
			checkComplete(t, r, wl)
			f := r.Failures[0]
			t.Logf("%s %s: completion %d ns, bypass %d ns, %d data packets lost, %d retransmits", fail.Element, tr.Name, r.CompletionNs, f.BypassNs, f.DataPackets, r.Retransmits)
			if f.DataPackets == 0 {
				t.Fatalf("%s: no traffic crossed the failure", tr.Name)
			}
			switch {
			case tr.Name == "ib":
				if r.CompletionNs < reconv.Nanoseconds() || f.BypassNs < time.Millisecond.Nanoseconds() {
					t.Errorf("static, %s: completion %d ns, bypass %d ns; want both past the first timeout, completion past the %v reconvergence", fail.Element, r.CompletionNs, f.BypassNs, reconv)
				}
			case fail.Kind == SwitchDown:
				// What was on the wire when it failed lands up to a
				// link delay (1 µs) and a packet later.
				if r.CompletionNs >= reroute || f.BypassNs > 2*time.Microsecond.Nanoseconds() {
					t.Errorf("adaptive, %s: completion %d ns, bypass %d ns; want completion before any rerouting (%d ns) and nothing sent into the dead switch after it failed", fail.Element, r.CompletionNs, f.BypassNs, reroute)
				}
			default:
				if r.CompletionNs >= reconv.Nanoseconds() || f.BypassNs >= reroute {
					t.Errorf("adaptive, %s: completion %d ns, bypass %d ns; want the bypass within SHIELD's %d ns and completion before routing reconverges", fail.Element, r.CompletionNs, f.BypassNs, reroute)
				}
			}
		}
	}
}

// TestIBDeterminism: the IB transports, with and without CCA, deliver
// every byte of a permutation plus an all-to-all over a multi-plane
// fabric, partitioned (credits cross partitions as messages), and a run
// is a function of the scenario and seed whatever the number of workers.
func TestIBDeterminism(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 32, Planes: 2, T0Down: 8, T0Up: 4})
	perm := smallPerm(t, 32, 512<<10)
	a2a, err := workload.AllToAll(32, 16<<10, true)
	if err != nil {
		t.Fatal(err)
	}
	wl := &workload.Workload{Name: "mix", Flows: append(append([]workload.Flow(nil), perm.Flows...), a2a.Flows...)}
	for i := range wl.Flows {
		wl.Flows[i].ID = i + 1
	}
	for _, tr := range []Transport{ibTransport(t, "ib"), ibTransport(t, "ib-ar"), IB("ib-ar-cca", vswitch.ModeAdaptive, ib.Config{CC: ib.CCCCA})} {
		cfg := Config{Topology: tp, Workload: wl, Transport: tr, Seed: 9, HostGroups: 3, Workers: 1}
		r := run(t, cfg)
		checkComplete(t, r, wl)
		if dropped(r) != 0 || r.Retransmits != 0 {
			t.Errorf("%s: %d drops, %d retransmits", tr.Name, dropped(r), r.Retransmits)
		}
		a := stripWall(t, r)
		cfg.Workers = 2
		if b := stripWall(t, run(t, cfg)); a != b {
			t.Errorf("%s: 1 and 2 workers give different results", tr.Name)
		}
		if b := stripWall(t, run(t, cfg)); a != b {
			t.Errorf("%s: same seed, different results", tr.Name)
		}
	}
}

// TestIBBufferTooSmall: a credit buffer that cannot hold the largest
// packet would stop every link; it is an error, not a hang.
func TestIBBufferTooSmall(t *testing.T) {
	tr := ibTransport(t, "ib")
	tr.CreditBuffer = 1024
	_, err := New(Config{Topology: clos2(t, topo.Clos2Config{Hosts: 8, T0Down: 4, T0Up: 2}), Workload: smallPerm(t, 8, 1<<16), Transport: tr})
	if err == nil || !strings.Contains(err.Error(), "holds no packet") {
		t.Fatalf("error %v", err)
	}
}
