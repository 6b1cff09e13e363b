package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
)

// ringJob is one all-reduce of size bytes over every one of ranks ranks,
// one GPU per server (so every hop crosses the fabric), steps times.
func ringJob(ranks int, size uint64, steps int) job.Job {
	j := job.Job{Name: "ring", Steps: steps, GPUsPerServer: 1, Ranks: make([][]job.Node, ranks)}
	for r := range j.Ranks {
		j.Ranks[r] = []job.Node{{ID: 1, Op: job.AllReduce, Name: "ar", Bytes: size}}
	}
	return j
}

func runJob(t *testing.T, tp *topo.Topology, j job.Job, tr Transport, seed uint64, workers int) *Result {
	t.Helper()
	if j.ReadyLatency == 0 {
		j.ReadyLatency = tp.OneWay(144 + 38) // as the scenario sets it
	}
	plan, err := job.Compile(j, tp.Hosts)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, Config{Topology: tp, Workload: plan.Workload, Job: plan, Transport: tr, Seed: seed, Workers: workers})
	checkComplete(t, r, plan.Workload)
	if r.Job == nil || r.Job.StepsDone != j.Steps {
		t.Fatalf("%s: job result %+v, want %d steps done", tr.Name, r.Job, j.Steps)
	}
	return r
}

// A ring all-reduce of S bytes on n ranks over a healthy fabric takes
// 2(n−1)/n · S / B plus latency, and its bus bandwidth is the link
// rate: within 5%, for MRC and RoCE. Bus bandwidth above the link rate
// would be an accounting error. (At 4 KiB MTU, MRC's headers and its
// SACKs, which share each host's uplink with the data it forwards, take
// 4-5% of the wire: the margin is small, docs/workloads.md.)
func TestJobRingAllReducePhysics(t *testing.T) {
	const n, size = 8, 64 << 20
	const rate = 100e9
	tp := clos2(t, topo.Clos2Config{Hosts: n, T0Down: 4, T0Up: 4, HostRate: rate})
	ideal := 2 * float64(n-1) / n * size * 8 / rate * 1e9 // ns
	// Latency: each of the 2(n−1) steps waits at most for one chunk to
	// cross (4 links of 1 µs and the chunk's last packet).
	latency := float64(2*(n-1)) * 5e3
	for _, tr := range []Transport{MRC(), RoCE(false)} {
		r := runJob(t, tp, ringJob(n, size, 1), tr, 1, 2)
		step := float64(r.Job.StepNs[0])
		t.Logf("%s: step %.0f ns, ideal %.0f ns (+%.0f latency), busbw %.2f Gb/s, %d connections",
			tr.Name, step, ideal, latency, r.Job.Collectives[0].BusBWGbps, r.Job.Conns)
		if step < ideal || step > 1.05*ideal+latency {
			t.Errorf("%s: step %.0f ns, want %.0f..%.0f", tr.Name, step, ideal, 1.05*ideal+latency)
		}
		bus := r.Job.Collectives[0].BusBWGbps
		if bus > rate/1e9 || bus < 0.95*rate/1e9 {
			t.Errorf("%s: busbw %.2f Gb/s, want within 5%% below %.0f", tr.Name, bus, rate/1e9)
		}
		if r.Job.Conns != n {
			t.Errorf("%s: %d connections, want %d (one per ring neighbour)", tr.Name, r.Job.Conns, n)
		}
		// The straggler's last flow in is from its ring neighbour and
		// arrived by the step's end.
		if st := r.Job.Straggler; st == nil || st.Flow == 0 || st.FlowDst != st.Host || st.FlowSrc != (st.Host+n-1)%n || st.FlowRecvNs > st.StepEndNs {
			t.Errorf("%s: straggler %+v", tr.Name, st)
		}
	}
}

// Persistent connections: every step reuses the QPs opened at the start,
// and the steps of a job on a healthy fabric take about the same time.
func TestJobStepsReuseConnections(t *testing.T) {
	const n = 4
	tp := clos2(t, topo.Clos2Config{Hosts: n, T0Down: 2, T0Up: 2})
	j := ringJob(n, 1<<20, 3)
	j.QPsPerConnection, j.Channels = 2, 2
	r := runJob(t, tp, j, MRC(), 3, 2)
	if want := n * 2 * 2; r.Job.Conns != want {
		t.Errorf("%d connections, want %d (ranks × channels × QPs)", r.Job.Conns, want)
	}
	for s, ns := range r.Job.StepNs {
		if d := float64(ns) / float64(r.Job.StepNs[0]); d < 0.8 || d > 1.25 {
			t.Errorf("step %d took %d ns, step 0 %d ns", s, ns, r.Job.StepNs[0])
		}
	}
}

// Compute and communication: a step of compute then an all-reduce
// that depends on it takes their sum; the compute share and the exposed
// communication add up to the step.
func TestJobComputeThenCollective(t *testing.T) {
	const n = 4
	tp := clos2(t, topo.Clos2Config{Hosts: n, T0Down: 2, T0Up: 2})
	j := ringJob(n, 1<<20, 2)
	comp := 200 * time.Microsecond
	for r := range j.Ranks {
		j.Ranks[r] = append([]job.Node{{ID: 2, Op: job.Compute, Duration: mtime.PicosOf(comp)}}, j.Ranks[r]...)
		j.Ranks[r][1].Deps = []int{2}
	}
	r := runJob(t, tp, j, MRC(), 1, 2)
	jr := r.Job
	for s, ns := range jr.StepNs {
		if ns <= comp.Nanoseconds() {
			t.Errorf("step %d took %d ns, no more than its compute %v", s, ns, comp)
		}
	}
	want := float64(comp.Nanoseconds()) * 2 / float64(jr.StepNs[0]+jr.StepNs[1])
	if d := jr.ComputeFraction - want; d < -0.01 || d > 0.01 {
		t.Errorf("compute fraction %.3f, want %.3f", jr.ComputeFraction, want)
	}
	if sum := jr.ComputeFraction + jr.ExposedCommFraction; sum < 0.97 || sum > 1.0001 {
		t.Errorf("compute %.3f + exposed communication %.3f = %.3f, want about 1 (nothing else runs)", jr.ComputeFraction, jr.ExposedCommFraction, sum)
	}
	if jr.GPUIdleFraction != 1-jr.ComputeFraction {
		t.Errorf("idle %.3f, compute %.3f", jr.GPUIdleFraction, jr.ComputeFraction)
	}
}

// The same seed gives the same step times for any worker count.
func TestJobDeterministicWorkers(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 8, Planes: 2, T0Down: 4, T0Up: 4})
	j := ringJob(8, 2<<20, 2)
	j.GPUsPerServer = 2
	a := runJob(t, tp, j, MRC(), 7, 1)
	b := runJob(t, tp, j, MRC(), 7, 2)
	if fmt.Sprint(a.Job.StepNs) != fmt.Sprint(b.Job.StepNs) {
		t.Errorf("step times differ: 1 worker %v, 2 workers %v", a.Job.StepNs, b.Job.StepNs)
	}
}

// A job whose ranks wait on other hosts only through delays of at least
// a window runs its hosts in several partitions (the triggers of one
// activate another's by message), and gives the same results for any
// number of workers: a training step of compute, a ring all-reduce that
// mixes scale-up and fabric hops, a halving-doubling all-reduce inside
// servers and across them, and an all-to-all, on 2 host partitions, with
// 1, 2 and 3 workers. With an instant readiness it runs on one.
func TestJobHostPartitions(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 16, Planes: 2, T0Down: 4, T0Up: 4})
	j := job.Job{Name: "mix", Steps: 2, GPUsPerServer: 4, Channels: 2, Ranks: make([][]job.Node, 16),
		ReadyLatency: tp.OneWay(144 + 38)}
	for r := range j.Ranks {
		j.Ranks[r] = []job.Node{
			{ID: 1, Op: job.Compute, Duration: mtime.Picos(20e6)},
			{ID: 2, Op: job.AllReduce, Bytes: 1 << 20, Deps: []int{1}},
			{ID: 3, Op: job.AllReduce, Bytes: 1 << 20, Group: []int{r / 4 * 4, r/4*4 + 1, r/4*4 + 2, r/4*4 + 3}, Algorithm: job.HalvingDoubling, Deps: []int{1}},
			{ID: 4, Op: job.AllReduce, Bytes: 1 << 20, Algorithm: job.HalvingDoubling, Deps: []int{2, 3}},
			{ID: 5, Op: job.AllToAll, Bytes: 1 << 20, Deps: []int{4}},
		}
	}
	partitions := func(j job.Job, workers int) (int, *Result) {
		plan, err := job.Compile(j, tp.Hosts)
		if err != nil {
			t.Fatal(err)
		}
		w, err := New(Config{Topology: tp, Workload: plan.Workload, Job: plan, Transport: MRC(), Seed: 5, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		checkComplete(t, r, plan.Workload)
		if r.Job.StepsDone != 2 {
			t.Fatalf("%d workers: %d steps done", workers, r.Job.StepsDone)
		}
		return len(w.shards) - w.swShards, r
	}
	var first string
	for _, workers := range []int{1, 2, 3} {
		n, r := partitions(j, workers)
		if n != 2 {
			t.Errorf("%d workers: %d host partitions, want 2", workers, n)
		}
		got := fmt.Sprint(r.Job.StepNs, r.Job.Collectives, r.Retransmits, r.Trims, r.Events)
		if first == "" {
			first = got
			t.Logf("steps %v, %d events", r.Job.StepNs, r.Events)
		} else if got != first {
			t.Errorf("%d workers: %s\nwant (1 worker) %s", workers, got, first)
		}
	}
	j.ReadyLatency = 0
	if n, _ := partitions(j, 2); n != 1 {
		t.Errorf("instant readiness: %d host partitions, want 1", n)
	}
}

// A collective inside one server never touches the fabric and takes the
// alpha-beta time of its ring over the scale-up domain: 2(n−1) steps of
// the latency plus S/n at the GPU's rate.
func TestJobScaleUpAllReduce(t *testing.T) {
	const n, size = 8, 8 << 20
	tp := clos2(t, topo.Clos2Config{Hosts: n, T0Down: 4, T0Up: 4})
	j := ringJob(n, size, 1)
	j.GPUsPerServer = n
	plan, err := job.Compile(j, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Workload.Flows) != 0 || plan.Conns != 0 {
		t.Fatalf("%d flows, %d connections: an all-reduce inside a server went to the fabric", len(plan.Workload.Flows), plan.Conns)
	}
	r := run(t, Config{Topology: tp, Workload: plan.Workload, Job: plan, Transport: MRC(), Seed: 1})
	su := job.DefaultScaleUp
	want := 2 * (n - 1) * (su.Latency.Seconds() + float64(size/n)*8/float64(su.BitsPerSec)) * 1e9
	if got := float64(r.Job.StepNs[0]); got < want-1 || got > want+1 {
		t.Errorf("step %.0f ns, want %.0f ns", got, want)
	}
	if c := r.Job.Collectives[0]; !c.ScaleUp || c.Count != 1 {
		t.Errorf("collective %+v", c)
	}
}

// The straggler view names the failure that held the slowest step's last
// flow up: with one T1 of every flow's paths silently blackholed from the
// start (every host on its own T0, so every ring hop crosses the T1s),
// the last flow's connection sent data into it. Without failures it names
// none.
func TestJobStragglerNamesFailure(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 4, T0Down: 1, T0Up: 4})
	j := ringJob(4, 1<<20, 1)
	plan, err := job.Compile(j, tp.Hosts)
	if err != nil {
		t.Fatal(err)
	}
	for _, fail := range []bool{false, true} {
		c := Config{Topology: tp, Workload: plan.Workload, Job: plan, Transport: MRC(), Seed: 1}
		if fail {
			c.Failures = []Failure{{Kind: SwitchBlackhole, Element: "t1-1", At: 0}}
		}
		r := run(t, c)
		checkComplete(t, r, plan.Workload)
		st := r.Job.Straggler
		if st == nil || st.Flow == 0 {
			t.Fatalf("failures %v: no straggler flow: %+v", fail, st)
		}
		want := 0
		if fail {
			want = 1
		}
		if len(st.FlowFailures) != want || fail && st.FlowFailures[0] != "t1-1" {
			t.Errorf("failures %v: the straggler's flow %d met %v", fail, st.Flow, st.FlowFailures)
		}
	}
}

// The per-rank timeline shows each compute phase and each communication
// at its real length: a 200 µs compute, a two-rank all-reduce inside a
// server (its alpha-beta time exactly), then 50 µs and 400 µs of
// compute with a fabric all-reduce of 8 MiB running under the second.
// What the all-reduce takes past the end of that compute is exposed.
func TestJobTimeline(t *testing.T) {
	const n = 4
	const su = 1 << 20
	us := func(d float64) mtime.Picos { return mtime.Picos(d * 1e6) }
	tp := clos2(t, topo.Clos2Config{Hosts: n, T0Down: 2, T0Up: 2})
	j := job.Job{Name: "timeline", Steps: 1, GPUsPerServer: 2, Ranks: make([][]job.Node, n)}
	for r := range j.Ranks {
		pair := []int{r / 2 * 2, r/2*2 + 1}
		j.Ranks[r] = []job.Node{
			{ID: 1, Op: job.Compute, Duration: us(200)},
			{ID: 2, Op: job.AllReduce, Name: "tp", Bytes: su, Group: pair, Deps: []int{1}},
			{ID: 3, Op: job.Compute, Duration: us(50), Deps: []int{2}},
			{ID: 4, Op: job.AllReduce, Name: "dp", Bytes: 8 << 20, Deps: []int{3}},
			{ID: 5, Op: job.Compute, Duration: us(400), Deps: []int{3}},
		}
	}
	r := runJob(t, tp, j, MRC(), 1, 2)
	jr := r.Job
	if len(jr.Timeline) != n {
		t.Fatalf("%d ranks in the timeline, want all %d", len(jr.Timeline), n)
	}
	sc := job.DefaultScaleUp
	tsu := int64(2 * (sc.Latency.Seconds() + float64(su/2)*8/float64(sc.BitsPerSec)) * 1e9) // ns, 2(n−1) steps of n = 2
	end := jr.StepNs[0]
	for _, rt := range jr.Timeline {
		c, x := int64(200_000), int64(200_000)+tsu // compute ends, the scale-up all-reduce ends
		wantComp := [][2]int64{{0, c}, {x, x + 450_000}}
		wantComm := [][2]int64{{c, x}, {x + 50_000, end}}
		if rt.Straggler && rt.StepEndNs[0] != end || rt.StepEndNs[0] > end {
			t.Errorf("rank %d: step end %v, the step ends at %d", rt.Rank, rt.StepEndNs, end)
		}
		if fmt.Sprint(rt.ComputeNs) != fmt.Sprint(wantComp) {
			t.Errorf("rank %d: compute %v, want %v", rt.Rank, rt.ComputeNs, wantComp)
		}
		// A rank's all-reduce ends when it has sent and received its
		// last chunk: at or before the step's end, and well after the
		// compute under it.
		comm := rt.CommNs
		if len(comm) != 2 || comm[0] != wantComm[0] || comm[1][0] != wantComm[1][0] || comm[1][1] > end || comm[1][1] < x+450_000+200_000 {
			t.Errorf("rank %d: communication %v, want %v (the second ending by %d)", rt.Rank, comm, wantComm, end)
		}
		exposed := rt.ExposedNs()
		if len(comm) == 2 && fmt.Sprint(exposed) != fmt.Sprint([][2]int64{comm[0], {x + 450_000, comm[1][1]}}) {
			t.Errorf("rank %d: exposed %v", rt.Rank, exposed)
		}
		if o := rt.OverlappedNs(); fmt.Sprint(o) != fmt.Sprint([][2]int64{{x + 50_000, x + 450_000}}) {
			t.Errorf("rank %d: overlapped %v, want the 400 µs compute", rt.Rank, o)
		}
	}
}

// The straggler view names the congested link that held the slowest
// step up: a four-rank ring on hosts 0–3 while hosts 4 and 5 each send
// host 2 a long flow, so that the last hop into host 2 carries three
// flows at once. The slowest flow on the step's critical path is a chunk
// from host 1 to host 2, and its connection lost the most time in that
// port's queue. Without the extra flows the critical path's slowest flow
// loses far less time anywhere.
func TestJobStragglerNamesHotLink(t *testing.T) {
	tp := clos2(t, topo.Clos2Config{Hosts: 6, T0Down: 2, T0Up: 2})
	plan, err := job.Compile(ringJob(4, 4<<20, 1), tp.Hosts)
	if err != nil {
		t.Fatal(err)
	}
	var lost [2]int64
	for i, hot := range []bool{false, true} {
		wl := *plan.Workload
		if hot {
			wl.Flows = append(slices.Clone(wl.Flows), workload.Flow{ID: len(wl.Flows) + 1, Src: 4, Dst: 2, Size: 16 << 20},
				workload.Flow{ID: len(wl.Flows) + 2, Src: 5, Dst: 2, Size: 16 << 20})
		}
		r := run(t, Config{Topology: tp, Workload: &wl, Job: plan, Transport: MRC(), Seed: 1})
		checkComplete(t, r, &wl)
		st := r.Job.Straggler
		if st == nil || st.Critical == nil {
			t.Fatalf("hot %v: no critical flow: %+v", hot, st)
		}
		c := st.Critical
		t.Logf("hot %v: step %d ns, straggler rank %d; critical flow %d h%d→h%d %d ns (%d flows on the path), hot link %+v",
			hot, r.Job.StepNs[0], st.Rank, c.Flow, c.Src, c.Dst, c.RecvNs-c.StartNs, c.PathFlows, c.HotLink)
		if hl := c.HotLink; hl != nil {
			lost[i] = hl.WaitedNs + int64(hl.Trimmed+hl.Dropped)*r.baseRTT.Nanoseconds()
		}
		if !hot {
			continue
		}
		if c.Src != 1 || c.Dst != 2 || c.PathFlows < 6 {
			t.Errorf("critical flow h%d→h%d of %d on the path, want h1→h2 of at least 2(n−1) = 6", c.Src, c.Dst, c.PathFlows)
		}
		if hl := c.HotLink; hl == nil || hl.Link != "t0-1→h2" || hl.WaitedPackets == 0 && hl.Trimmed == 0 || hl.PeakQueueBytes <= 0 {
			t.Errorf("hot link %+v, want t0-1→h2 with packets held up", hl)
		}
	}
	if lost[1] < 10*lost[0] || lost[1] == 0 {
		t.Errorf("time lost at the hottest link: %d ns without the extra flows, %d ns with them", lost[0], lost[1])
	}
}

// Halving-doubling: an all-reduce of S bytes on n ranks (a power of two)
// is log₂ n exchanges of S/2, S/4, …, S/n then log₂ n of S/n, …, S/2, and
// takes 2·log₂ n·α + 2(n−1)/n·S/B (Thakur, Rabenseifner and Gropp 2005);
// its reduce-scatter and all-gather alone take half of that. On a fabric
// where the exchanges meet no contention (the model's assumption: the
// ranks under one T0), each takes that time within 5%, with α one
// chunk's crossing and B the payload rate of a full 4 KiB WRITE (MRC's
// 124 bytes of SRv6-encapsulated headers and 38 of Ethernet,
// TestLoneFlowFCT), for MRC and RoCE; never faster than the link rate.
func TestJobHalvingDoublingPhysics(t *testing.T) {
	const n, size, mtu = 8, 64 << 20, 4096
	const rate = 100e9
	tp := clos2(t, topo.Clos2Config{Hosts: n, T0Down: n, T0Up: 2, HostRate: rate})
	payload := rate * mtu / (mtu + 124 + 38)
	const alpha = 5e3 // ns: 2 links of 1 µs, a chunk's last packet store-and-forward
	for _, c := range []struct {
		op     job.Op
		passes float64
	}{{job.AllReduce, 2}, {job.ReduceScatter, 1}, {job.AllGather, 1}} {
		for _, tr := range []Transport{MRC(), RoCE(false)} {
			j := ringJob(n, size, 1)
			j.Algorithm = job.HalvingDoubling
			for r := range j.Ranks {
				j.Ranks[r][0].Op = c.op
			}
			r := runJob(t, tp, j, tr, 1, 2)
			bytes := c.passes * float64(n-1) / n * size * 8 // bits through each rank's link
			ab := c.passes*3*alpha + bytes/payload*1e9      // ns; 3 = log₂ 8 exchanges per pass
			step := float64(r.Job.StepNs[0])
			t.Logf("%s %s: step %.0f ns, alpha-beta %.0f ns, busbw %.2f Gb/s, %d connections",
				tr.Name, c.op, step, ab, r.Job.Collectives[0].BusBWGbps, r.Job.Conns)
			if step < bytes/rate*1e9 || step > 1.05*ab {
				t.Errorf("%s %s: step %.0f ns, want %.0f..%.0f", tr.Name, c.op, step, bytes/rate*1e9, 1.05*ab)
			}
			if want := n * 3; r.Job.Conns != want {
				t.Errorf("%s %s: %d connections, want %d (one to each of log₂ n partners)", tr.Name, c.op, r.Job.Conns, want)
			}
		}
	}
}

// Halving-doubling inside one server is one alpha-beta delay: 2·log₂ n
// latencies and 2(n−1)·S/n at the GPU's scale-up rate.
func TestJobScaleUpHalvingDoubling(t *testing.T) {
	const n, size = 8, 8 << 20
	tp := clos2(t, topo.Clos2Config{Hosts: n, T0Down: 4, T0Up: 4})
	j := ringJob(n, size, 1)
	j.GPUsPerServer, j.Algorithm = n, job.HalvingDoubling
	plan, err := job.Compile(j, n)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, Config{Topology: tp, Workload: plan.Workload, Job: plan, Transport: MRC(), Seed: 1})
	su := job.DefaultScaleUp
	want := (2*3*su.Latency.Seconds() + 2*(n-1)*float64(size/n)*8/float64(su.BitsPerSec)) * 1e9
	if got := float64(r.Job.StepNs[0]); got < want-1 || got > want+1 {
		t.Errorf("step %.0f ns, want %.0f ns", got, want)
	}
}
