package sim

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/openmrc/mrc/sim/htsim"
	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
)

// BenchmarkPermutation measures the event loop on a 256-host, 4-plane
// two-tier fabric carrying a 256 KiB permutation with MRC: events per
// second and wall nanoseconds per event (setup excluded).
func BenchmarkPermutation(b *testing.B) {
	tp, err := topo.Clos2(topo.Clos2Config{Hosts: 256, Planes: 4, T0Down: 16, T0Up: 16})
	if err != nil {
		b.Fatal(err)
	}
	wl, _ := workload.Permutation(256, 256<<10, 1)
	var events uint64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		w, err := New(Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 1, SeriesFlows: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r, err := w.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}

// htsimInputs reads htsim's topology topoFile and connection matrix
// cmFile, as bundled with mrc (or from the shared data when run outside).
func htsimInputs(t testing.TB, topoFile, cmFile string) (*topo.Topology, *workload.Workload) {
	dir := "../scenario/presets/htsim/" // bundled with mrc
	if _, err := os.Stat(dir); err != nil {
		dir = "/work/shared/data/htsim/"
		if _, err := os.Stat(dir); err != nil {
			t.Skip("htsim samples not available")
		}
	}
	tf, err := htsim.ReadTopoFile(dir + topoFile)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tf.Build(1)
	if err != nil {
		t.Fatal(err)
	}
	wl, _, err := htsim.ReadCMFile(dir + cmFile)
	if err != nil {
		t.Fatal(err)
	}
	return tp, wl
}

// htsim's reference input: 1024 × 2 MB on its 1024-host leaf-spine.
const permTopo, permCM = "leaf_spine_1024.topo", "perm_1024n_1024c_0u_2000000b.cm"

// BenchmarkHtsimPermutation runs htsim's reference input (1024 × 2 MB on
// its 1024-host leaf-spine); htsim takes 10–12 s on this machine class.
func BenchmarkHtsimPermutation(b *testing.B) {
	tp, wl := htsimInputs(b, permTopo, permCM)
	var r *Result
	for b.Loop() {
		b.StopTimer()
		w, err := New(Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 1, SeriesFlows: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if r, err = w.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.Events), "events")
	b.ReportMetric(float64(r.FCT.Max), "tail-fct-ns")
}

// The htsim reference scenario as a regression test: every flow completes
// and the tail stays within 1.6 × the serialisation bound.
func TestHtsimPermutation(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	tp, wl := htsimInputs(t, permTopo, permCM)
	r := run(t, Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 1, SeriesFlows: -1})
	checkComplete(t, r, wl)
	t.Logf("FCT %+v ns, ideal %d ns, %d events, %.2f s", r.FCT, r.IdealNs, r.Events, r.WallS)
	if float64(r.FCT.Max) > 1.6*float64(r.IdealNs) {
		t.Errorf("tail FCT %d ns, more than 1.6 × the ideal %d ns", r.FCT.Max, r.IdealNs)
	}
}

// BenchmarkEngineEvent measures the calendar alone: one pop and one push
// per event, with 4096 events pending spread over the next 10 µs, the
// way serialisation and propagation spread them. ns/event; no
// allocations once warmed up.
func BenchmarkEngineEvent(b *testing.B) {
	c := newCalendar()
	var seq uint64 // each event's arg: no twins
	x := uint64(1)
	step := func(now Time) Time { // xorshift: a delay in [0, 10 µs)
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return now + Time(x%10_000_000)
	}
	for range 4096 {
		seq++
		c.push(event{at: step(0), arg: seq})
	}
	for range 100_000 { // warm the buckets up to their working size
		c.advance(never)
		e := c.pop()
		seq++
		c.push(event{at: step(e.at), arg: seq})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if c.advance(never) == nil {
			b.Fatal("calendar ran dry")
		}
		e := c.pop()
		seq++
		c.push(event{at: step(e.at), arg: seq})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
}

// BenchmarkSortBucket sorts a calendar bucket of 48 to 4,096 events in
// push order with random times inside the bucket, as a large fabric
// fills one: sortEvents (radix) against the pdqsort with a compare
// function it replaced, on the same buckets. ns/event.
func BenchmarkSortBucket(b *testing.B) {
	pdq := func(bk, tmp []event, _ *[]uint64) []event {
		slices.SortFunc(bk, func(a, b event) int {
			if c := cmp.Compare(a.at, b.at); c != 0 {
				return c
			}
			return cmp.Compare(a.arg, b.arg)
		})
		return tmp
	}
	for _, n := range []int{calSortMin, 256, 4096} {
		rng := rand.New(rand.NewPCG(uint64(n), 3))
		src := make([]event, n)
		for i := range src {
			src[i] = event{at: Time(rng.Int64N(1 << calBits)), arg: uint64(i)}
		}
		for _, sorter := range []struct {
			name string
			sort func(bk, tmp []event, ties *[]uint64) []event
		}{{"radix", sortEvents}, {"pdqsort", pdq}} {
			b.Run(fmt.Sprintf("%s/%d", sorter.name, n), func(b *testing.B) {
				bk := make([]event, n)
				var tmp []event
				var ties []uint64
				b.ReportAllocs()
				for b.Loop() {
					copy(bk, src)
					tmp = sorter.sort(bk, tmp, &ties)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
			})
		}
	}
}

// firstSwitchPacket builds a world and runs it until the first packet
// reaches a switch; it returns the world, that packet's bytes and wire
// length, and the switch and port it reaches.
func firstSwitchPacket(b *testing.B) (w *World, pkt []byte, wl uint16, si int32, in int) {
	tp, err := topo.Clos2(topo.Clos2Config{Hosts: 64, Planes: 1, T0Down: 8, T0Up: 8})
	if err != nil {
		b.Fatal(err)
	}
	wk, _ := workload.Permutation(64, 1<<20, 1)
	w, err = New(Config{Topology: tp, Workload: wk, Transport: MRC(), Seed: 1, SeriesFlows: -1, Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	hosts := int32(tp.Hosts)
	for end := w.lookahead; end < 1_000*w.lookahead; end += w.lookahead {
		for _, s := range w.shards {
			s.run(end, nil)
		}
		for _, s := range w.shards {
			s.ingest()
		}
		for dl := range w.rx {
			if h := w.rx[dl].head; h != nilPkt && w.lk[dl].to >= hosts {
				p, hdr := w.shards[0].pkt(h)
				return w, append([]byte(nil), hdr[:p.n]...), p.wl, w.lk[dl].to - hosts, int(w.lk[dl].toPort)
			}
		}
	}
	b.Fatal("no packet reached a switch")
	return
}

// BenchmarkSwitchHop measures one switch hop of a data packet: the
// vswitch's forwarding and queueing (switchRecv), the egress port
// starting to serialise it (swStart), the packet entering the link's pipe
// and its arrival event leaving the calendar (the next node's work is
// not counted). ns/hop, no allocations.
func BenchmarkSwitchHop(b *testing.B) {
	w, pkt, wl, si, in := firstSwitchPacket(b)
	s := w.shards[w.sws[si].shard]
	hosts := int32(w.t.Hosts)
	// Forget the traffic in flight: an empty queue and empty pipes.
	s.queue = newCalendar()
	for dl := range w.rx {
		w.rx[dl].head, w.rx[dl].tail = nilPkt, nilPkt
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.now += 1 << calBits // one calendar bucket later each time
		h, ok := s.alloc(len(pkt))
		if !ok {
			b.Fatal(s.err)
		}
		p, hdr := s.pkt(h)
		p.n, p.wl = uint8(copy(hdr, pkt)), wl
		s.switchRecv(si, in, h, p, hdr)
		// The packet is now in the pipe of the egress link: take its
		// arrival event and deliver it, but stop short of the next node.
		if s.queue.advance(never) == nil {
			b.Fatal("the switch sent nothing")
		}
		e := s.queue.pop()
		dl := e.id()
		w.tx[dl].busyUntil, w.tx[dl].pending = 0, false // idle again
		r := &w.rx[dl]
		hh := r.head
		r.head, r.tail = nilPkt, nilPkt
		if w.lk[dl].from != hosts+si {
			b.Fatalf("event on link %d, not out of switch %d", dl, si)
		}
		s.release(hh)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/hop")
}

// BenchmarkMemoryBig builds the 131,072-GPU × 8-plane fabric of
// --preset big (512-port switches) and the endpoints of its permutation,
// runs no traffic, and reports the heap it holds per host. -benchtime=1x
// is enough; skipped under -short.
func BenchmarkMemoryBig(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 131,072-host world")
	}
	for _, hosts := range []int{8192, 32768, 131072} {
		b.Run(fmt.Sprint(hosts), func(b *testing.B) { memoryPerHost(b, hosts) })
	}
}

func memoryPerHost(b *testing.B, hosts int) {
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		tp, err := topo.Clos2(topo.Clos2Config{Hosts: hosts, Planes: 8, T0Down: 256, T0Up: 256,
			HostDelay: 500 * time.Nanosecond, FabricDelay: time.Microsecond})
		if err != nil {
			b.Fatal(err)
		}
		wl, _ := workload.Permutation(hosts, 1<<20, 1)
		w, err := New(Config{Topology: tp, Workload: wl, Transport: MRC(), Seed: 1, SeriesFlows: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(w)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(hosts), "B/host")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB")
		b.StartTimer()
	}
}

// BenchmarkRingAllReduce64 runs the 64-GPU, 64 MiB ring all-reduce of
// examples/ring64-mrc-4x100g.yaml (64 hosts × 4 planes of 100 Gb/s, 8
// hosts per T0, one QP per ring neighbour, MRC) with its hosts in one
// partition and in two (the default since job triggers cross partitions
// by message): events per second, wall time per simulated millisecond,
// and the peak heap. Run with -benchtime 1x -count N and compare the two
// in pairs.
func BenchmarkRingAllReduce64(b *testing.B) {
	tp, err := topo.Clos2(topo.Clos2Config{Hosts: 64, Planes: 4, T0Down: 8, T0Up: 8})
	if err != nil {
		b.Fatal(err)
	}
	j := job.Job{Name: "ring64", GPUsPerServer: 1, Ranks: make([][]job.Node, 64), ReadyLatency: tp.OneWay(144 + 38)}
	for r := range j.Ranks {
		j.Ranks[r] = []job.Node{{ID: 1, Op: job.AllReduce, Bytes: 64 << 20}}
	}
	for _, groups := range []int{1, 2} {
		b.Run(fmt.Sprintf("hostgroups=%d", groups), func(b *testing.B) {
			var events uint64
			var sim time.Duration
			for b.Loop() {
				b.StopTimer()
				plan, err := job.Compile(j, tp.Hosts)
				if err != nil {
					b.Fatal(err)
				}
				w, err := New(Config{Topology: tp, Workload: plan.Workload, Job: plan, Transport: MRC(), Seed: 1, HostGroups: groups, SeriesFlows: -1})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				r, err := w.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				events += r.Events
				sim += time.Duration(r.SimTimeNs)
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(b.Elapsed().Seconds()/(sim.Seconds()*1e3), "wall-s/sim-ms")
		})
	}
}
