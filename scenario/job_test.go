package scenario

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

const jobFabric = "topology: {hosts: 16, t0_down: 4, t0_up: 4}\n"

// Bad training jobs get one-line errors naming the key or the file and
// line.
func TestJobErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(dir+"/"+name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("big.txt", "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 all_gpus: 32\n1\nl -1 5 ALLREDUCE 1024 1 NONE 0 1 NONE 0 100\n")
	write("odd.txt", "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 3 all_gpus: 16\n1\nl -1 5 ALLREDUCE 1024 1 NONE 0 1 NONE 0 100\n")
	write("bad.txt", "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 all_gpus: 16\n2\nl -1 5 ALLREDUCE 1024 1 NONE 0 1 NONE 0 100\nl -1 5 SCATTER 1024 1 NONE 0 1 NONE 0 100\n")
	for _, c := range []struct{ yml, want string }{
		{jobFabric + "workload: {kind: ring_allreduce, size: 1MiB, hosts: 20}\n", "x.yaml:2: workload: 20 ranks, but the fabric has 16 hosts"},
		{jobFabric + "workload: {kind: ring_allreduce}\n", "workload.size: required"},
		{jobFabric + "workload: {kind: ring_allreduce, size: 1MiB, placement: scattered}\n", `workload.placement: "scattered": want packed, random or rail`},
		{jobFabric + "workload: {kind: permutation, size: 1MiB, qps_per_connection: 2}\n", "workload.qps_per_connection: not used with kind permutation"},
		{jobFabric + "workload: {kind: training}\n", "workload.ops: required with kind training"},
		{jobFabric + "workload:\n  kind: training\n  ops:\n    - {op: all_reduce, size: 1MiB, group_size: 5}\n", "workload.ops[0].group_size: 5 does not divide the 16 ranks"},
		{jobFabric + "workload:\n  kind: training\n  ops:\n    - {op: broadcast, size: 1MiB}\n", `workload.ops[0].op: "broadcast"`},
		{jobFabric + "workload:\n  kind: training\n  ops:\n    - {op: compute}\n", "workload.ops[0].duration: required"},
		{jobFabric + "workload: {kind: simai, file: big.txt}\n", dir + "/big.txt: all_gpus 32, but the fabric has 16 hosts"},
		{jobFabric + "workload: {kind: simai, file: odd.txt}\n", dir + "/odd.txt: model_parallel_NPU_group 3 does not divide the 16 GPUs"},
		{jobFabric + "workload: {kind: simai, file: bad.txt}\n", dir + "/bad.txt:4: forward: unknown collective \"SCATTER\""},
		{jobFabric + "workload: {kind: simai, file: none.txt}\n", "workload.file: " + dir + "/none.txt: no such file"},
		{jobFabric + "workload:\n  - {kind: ring_allreduce, size: 1MiB}\n  - {kind: simai, file: odd.txt}\n", "one training job per scenario"},
		{jobFabric + "workload: {kind: ring_allreduce, size: 1MiB, algorithm: tree}\n", `workload.algorithm: "tree": want ring or halving_doubling`},
		{jobFabric + "workload: {kind: permutation, size: 1MiB, algorithm: ring}\n", "workload.algorithm: not used with kind permutation"},
		{jobFabric + "workload:\n  kind: training\n  ops:\n    - {op: all_reduce, size: 1MiB, group_size: 8, algorithm: rings}\n", `workload.ops[0].algorithm: "rings": want ring or halving_doubling`},
		{jobFabric + "workload:\n  kind: training\n  ops:\n    - {op: compute, duration: 1us, algorithm: ring}\n", "workload.ops[0].algorithm: compute has no algorithm"},
		{jobFabric + "workload: {kind: ring_allreduce, size: 1MiB, hosts: 12, algorithm: halving_doubling}\n", "halving_doubling needs a power-of-two group, not 12 ranks"},
	} {
		s, err := Parse([]byte(c.yml), source{file: dir + "/x.yaml", dir: dir}, "x")
		if err == nil {
			_, err = s.Build(Overrides{})
		}
		checkErr(t, c.yml, err, strings.TrimPrefix(c.want, "x.yaml"))
	}
}

// A training job runs its steps: compute then an all-reduce over
// consecutive groups (inside servers) and one over strided groups
// (across them); the step is at least its compute and the collectives'
// bytes at the link rate.
func TestTrainingJobRuns(t *testing.T) {
	yml := jobFabric + `transports: [mrc]
workload:
  kind: training
  steps: 2
  gpus_per_server: 4
  qps_per_connection: 2
  ops:
    - {op: compute, duration: 100us}
    - {op: all_reduce, size: 1MiB, group_size: 4, name: tp}
    - {op: all_reduce, size: 4MiB, group_size: 4, strided: true, name: dp}
    - {op: all_reduce, size: 4MiB, group_size: 4, strided: true, name: dp-hd, algorithm: halving_doubling}
`
	s, err := Parse([]byte(yml), source{file: "x.yaml"}, "x")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Build(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Job == nil || p.Runs[0].Job != p.Job {
		t.Fatal("the run has no job")
	}
	rep, err := Run(t.Context(), p, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := rep.Results[0].Job
	if j == nil || j.StepsDone != 2 {
		t.Fatalf("job result %+v", j)
	}
	// The DP all-reduces: 4 ranks on 4 servers, each 2·3/4 of 4 MiB over
	// a 100 Gb/s NIC.
	floor := int64(100_000 + 2*2*3*(4<<20)/4*8/100)
	for s, ns := range j.StepNs {
		if ns < floor {
			t.Errorf("step %d: %d ns, under %d ns", s, ns, floor)
		}
	}
	var tp, dp, hd bool
	for _, c := range j.Collectives {
		switch c.Name {
		case "tp":
			tp = c.ScaleUp && c.Ranks == 4 && c.Count == 8 // 4 groups × 2 steps
		case "dp":
			dp = !c.ScaleUp && c.Ranks == 4 && c.Count == 8 && c.BusBWGbps > 50 && c.BusBWGbps <= 100
		case "dp-hd":
			hd = !c.ScaleUp && c.Ranks == 4 && c.Count == 8 && c.BusBWGbps > 50 && c.BusBWGbps <= 100
		}
		t.Logf("%+v", c)
	}
	if !tp || !dp || !hd {
		t.Errorf("collectives %+v: want tp inside servers, dp and dp-hd over the fabric", j.Collectives)
	}
	// Per DP group of 4: 4 ring neighbours, and 8 halving-doubling
	// partners (distance 2 and 1, both ways) of which 2 are ring
	// neighbours too.
	if j.Conns != 4*(4+6)*2 {
		t.Errorf("%d connections, want 80 (4 groups × (4 ring neighbours + 6 more halving-doubling partners) × 2 QPs)", j.Conns)
	}
}

// SimAI's micro all-reduce samples complete on a healthy fabric with
// every collective on it (one GPU per server), each at a bus bandwidth
// close to the 100 Gb/s line rate.
func TestSimAIMicroAllReduce(t *testing.T) {
	for _, f := range []string{"microAllReduce.txt", "microAllReduce_16g.txt"} {
		s, err := FromWorkload("simai/"+f, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Build(Overrides{Transports: []string{"mrc"}})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(t.Context(), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j := rep.Results[0].Job
		if j == nil || j.StepsDone != 1 || len(j.Collectives) != 2 {
			t.Fatalf("%s: job %+v", f, j)
		}
		for _, c := range j.Collectives {
			t.Logf("%s: %s %s of %d B on %d ranks: %.0f ns, busbw %.1f Gb/s", f, c.Name, c.Op, c.Bytes, c.Ranks, c.MeanNs, c.BusBWGbps)
			if c.ScaleUp || c.BusBWGbps < 90 || c.BusBWGbps > 100 {
				t.Errorf("%s: %+v: want a fabric collective at 90-100 Gb/s", f, c)
			}
		}
	}
}

// The Chakra samples bundled with mrc run as a scenario's workload
// (kind chakra) over the fabric: every rank's collective completes, its
// bus bandwidth below the line rate and its bytes what the trace says.
func TestChakraWorkload(t *testing.T) {
	for _, c := range []struct {
		file  string
		ranks int
	}{
		{"chakra/all_reduce/16npus_1MB", 16},
		{"chakra/all_to_all/8npus_1MB/all_to_all.0.et", 8},
	} {
		yml := fmt.Sprintf(`topology: {kind: clos2, hosts: %d, t0_down: 4, t0_up: 4}
transports: [mrc]
workload: {kind: chakra, file: %s, gpus_per_server: 1}
`, c.ranks, c.file)
		s, err := Parse([]byte(yml), source{file: "x.yaml"}, "x")
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Build(Overrides{})
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		rep, err := Run(t.Context(), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Results[0]
		if r.Job == nil || r.Job.StepsDone != 1 || r.FlowsCompleted != r.Flows || len(r.Job.Collectives) != 1 {
			t.Fatalf("%s: job %+v, %d of %d flows", c.file, r.Job, r.FlowsCompleted, r.Flows)
		}
		if col := r.Job.Collectives[0]; col.Ranks != c.ranks || col.Bytes != 1<<20 || col.BusBWGbps <= 0 || col.BusBWGbps > 100 {
			t.Errorf("%s: collective %+v", c.file, col)
		}
	}
	for _, c := range []struct{ yml, want string }{
		{"workload: {kind: chakra}", "x.yaml:5: workload.file: required with kind chakra"},
		{"workload: {kind: chakra, file: nowhere}", "no trace files"},
		{"workload: {kind: chakra, file: chakra/all_reduce/16npus_1MB, hosts: 4}", "workload.hosts: not used with kind chakra"},
		{"workload: {kind: chakra, file: chakra/all_reduce/16npus_1MB}", "16 ranks"},
	} {
		yml := "topology: {kind: clos2, hosts: 8, t0_down: 4, t0_up: 4}\ntransports: [mrc]\n\n\n" + c.yml + "\n"
		s, err := Parse([]byte(yml), source{file: "x.yaml"}, "x")
		if err == nil {
			_, err = s.Build(Overrides{})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yml, err, c.want)
		}
	}
}
