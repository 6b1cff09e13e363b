package sim

import (
	"testing"
	"time"

	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/tcp"
)

// TCP and DCTCP deliver every byte of a permutation once, and the same
// seed gives the same JSON.
func TestTCPTransportsDeliverDeterministically(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 32, Planes: 2, T0Down: 8, T0Up: 4})
	wl := smallPerm(t, 32, 1<<20)
	for _, name := range []string{"tcp", "dctcp"} {
		tr, err := LookupTransport(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Topology: tp, Workload: wl, Transport: tr, Seed: 4}
		r := run(t, cfg)
		checkComplete(t, r, wl)
		if a, b := stripWall(t, r), stripWall(t, run(t, cfg)); a != b {
			t.Errorf("%s: same seed, different results", name)
		}
		var rx uint64
		for _, p := range r.PerPlane {
			rx += p.RxPayloadBytes
		}
		if rx < wl.Bytes() || r.Retransmits == 0 && rx != wl.Bytes() {
			t.Errorf("%s: planes carried %d payload bytes, want %d (TCP has no ICRC; %d retransmits)", name, rx, wl.Bytes(), r.Retransmits)
		}
		if name == "dctcp" && r.ECNMarks == 0 {
			t.Errorf("dctcp: no ECN marks on a permutation over ECMP (hash collisions make hot spots)")
		}
		if name == "tcp" && r.ECNMarks != 0 {
			t.Errorf("tcp: %d ECN marks on packets that are not ECN-capable", r.ECNMarks)
		}
	}
}

// BGP reconvergence applies to TCP as to every ECMP transport: a
// connection hashed through a failed T1 loses its packets until routing
// reconverges, then its retransmission timer carries it on another path.
// (Without reconvergence the timer would retry into the dead switch
// for ever.)
func TestTCPReconvergence(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, T0Down: 4, T0Up: 4})
	wl := smallPerm(t, 16, 4<<20)
	const at, reconv = 20 * time.Microsecond, 3 * time.Millisecond
	tr := TCP("tcp-1ms", tcp.NewReno, tcp.Config{MinRTO: time.Millisecond})
	r := run(t, Config{Topology: tp, Workload: wl, Transport: tr, Seed: 8, Reconvergence: reconv, LocalRepair: reconv,
		Failures: []Failure{{Kind: SwitchDown, Element: "t1-1", At: at}}})
	checkComplete(t, r, wl)
	f := r.Failures[0]
	t.Logf("bypass %d ns, %d data packets lost, %d loss timeouts, completion %d ns", f.BypassNs, f.DataPackets, r.LossTimeouts, r.CompletionNs)
	if f.DataPackets == 0 {
		t.Fatal("no traffic crossed the failed switch")
	}
	// The timer's retries (1 ms, then backed off) go into the dead switch
	// until routing reconverges, none after.
	if f.BypassNs > reconv.Nanoseconds() || f.BypassNs < time.Millisecond.Nanoseconds() {
		t.Errorf("bypass %d ns, want between the first timeout (1 ms) and the %v reconvergence", f.BypassNs, reconv)
	}
	if r.CompletionNs < reconv.Nanoseconds() {
		t.Errorf("completion %d ns before routing reconverged", r.CompletionNs)
	}
}

// A packet's wire length is kept in 16 bits: the largest segment TCP
// sends (its largest MSS, 65,535 bytes less IPv6 and the longest TCP
// header) crosses the fabric whole, and the planes count its payload
// once.
func TestTCPLargestSegmentIsCarried(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 4, T0Down: 2, T0Up: 2})
	wl := smallPerm(t, 4, 1<<20)
	mss := 65535 - tcp.IPv6HeaderRoom
	tr := TCP("tcp-max-mss", tcp.NewReno, tcp.Config{MSS: mss})
	r := run(t, Config{Topology: tp, Workload: wl, Transport: tr, Seed: 3, MTU: 9000})
	checkComplete(t, r, wl)
	var rx uint64
	for _, p := range r.PerPlane {
		rx += p.RxPayloadBytes
	}
	if rx < wl.Bytes() || r.Retransmits == 0 && rx != wl.Bytes() {
		t.Errorf("planes carried %d payload bytes in %d-byte segments, want %d (%d retransmits)", rx, mss, wl.Bytes(), r.Retransmits)
	}
}
