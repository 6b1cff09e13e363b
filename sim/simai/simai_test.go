package simai

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openmrc/mrc/sim/job"
)

// samples are the SimAI workloads bundled with mrc.
const samples = "../../scenario/presets/simai"

// SimAI's samples parse, with the header's parallelism and every layer.
func TestReadSamples(t *testing.T) {
	for _, c := range []struct {
		file              string
		tp, ep, gpus, n   int
		ga, vpp           int
		firstOp           job.Op
		firstBytes        uint64
		firstGroup        GroupKind
		wgOpLast          job.Op
		wgGroupLast       GroupKind
		wgBytesLast       uint64
		fwdComputeNsFirst int64
	}{
		{"microAllReduce.txt", 8, 1, 8, 2, 1, 8, job.AllReduce, 16 << 20, TP, 0, 0, 0, 556000},
		{"microAllReduce_dp.txt", 8, 1, 16, 2, 1, 8, job.AllReduce, 16 << 20, TP, job.AllReduce, DP, 128 << 20, 556000},
		{"workload_gpt7b_64g.txt", 8, 1, 64, 1058, 8, 32, job.AllGather, 1529348096, TP, 0, 0, 0, 1},
		{"workload_ep_test.txt", 4, 4, 32, 43, 1, 1, 0, 0, 0, 0, 0, 0, 1},
	} {
		w, err := ReadFile(filepath.Join(samples, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if w.TP != c.tp || w.EP != c.ep || w.GPUs != c.gpus || len(w.Layers) != c.n || w.GA != c.ga || w.VPP != c.vpp || w.PP != 1 {
			t.Errorf("%s: tp %d ep %d gpus %d layers %d ga %d vpp %d pp %d", c.file, w.TP, w.EP, w.GPUs, len(w.Layers), w.GA, w.VPP, w.PP)
		}
		first, last := w.Layers[0], w.Layers[len(w.Layers)-1]
		if first.Fwd.Comm != (Comm{c.firstOp, c.firstGroup, c.firstBytes}) && c.firstOp != 0 {
			t.Errorf("%s: first layer's forward communication %+v", c.file, first.Fwd.Comm)
		}
		if first.Fwd.ComputeNs != c.fwdComputeNsFirst {
			t.Errorf("%s: first layer's forward compute %d ns", c.file, first.Fwd.ComputeNs)
		}
		if last.WG.Comm != (Comm{c.wgOpLast, c.wgGroupLast, c.wgBytesLast}) {
			t.Errorf("%s: last layer's weight-gradient communication %+v", c.file, last.WG.Comm)
		}
	}
}

// Every group kind partitions the ranks into groups of its size, and a
// rank's group contains it; TP groups are consecutive ranks and DP groups
// take one rank of each TP group.
func TestGroupsPartition(t *testing.T) {
	for _, c := range []struct{ ranks, tp, ep int }{{8, 8, 1}, {16, 8, 1}, {64, 8, 1}, {32, 4, 4}, {32, 2, 2}, {12, 3, 2}} {
		w := &Workload{File: "x", Policy: FwdInBckwd, TP: c.tp, EP: c.ep, PP: 1}
		g, err := w.groups(c.ranks)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []GroupKind{TP, DP, EP, DPEP} {
			size := map[GroupKind]int{TP: g.tp, DP: g.dp, EP: g.ep, DPEP: g.dpep}[k]
			seen := map[int]string{}
			for r := range c.ranks {
				m := g.members(k, r)
				if len(m) != size || !slices.Contains(m, r) {
					t.Fatalf("%+v %v: rank %d's group %v, want %d ranks including it", c, k, r, m, size)
				}
				key := fmt.Sprint(m)
				if prev, ok := seen[r]; ok && prev != key {
					t.Fatalf("%+v %v: rank %d in groups %s and %s", c, k, r, prev, key)
				}
				for _, x := range m {
					if prev, ok := seen[x]; ok && prev != key {
						t.Fatalf("%+v %v: rank %d in groups %s and %s", c, k, x, prev, key)
					}
					seen[x] = key
				}
			}
		}
		for r := range c.ranks {
			for _, x := range g.members(TP, r) {
				if x/c.tp != r/c.tp {
					t.Errorf("%+v: TP group of %d has %d", c, r, x)
				}
			}
			for _, x := range g.members(DP, r) {
				if x%c.tp != r%c.tp {
					t.Errorf("%+v: DP group of %d has %d (another place in its TP group)", c, r, x)
				}
			}
		}
	}
}

// Bad input names the file and line.
func TestReadErrors(t *testing.T) {
	const head = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 8\n"
	const good = "l -1 5 ALLREDUCE 1024 1 NONE 0 1 NONE 0 100\n"
	for _, c := range []struct{ in, want string }{
		{"", "w.txt: empty file"},
		{"PIPELINE x\n1\n" + good, "w.txt:1: training loop \"PIPELINE\""},
		{"HYBRID_TRANSFORMER model_parallel_NPU_group: x\n1\n" + good, "w.txt:1: model_parallel_NPU_group: \"x\""},
		{head, "w.txt: missing the layer count"},
		{head + "two\n", "w.txt:2: layer count"},
		{head + "1\nl -1 5 BROADCAST 1024 1 NONE 0 1 NONE 0 100\n", "w.txt:3: forward: unknown collective \"BROADCAST\""},
		{head + "2\n" + good + "l -1 5 ALLREDUCE 1024 1 NONE 0 1 ALLREDUCE_XY 0 100\n", "w.txt:4: weight gradient: unknown collective \"ALLREDUCE_XY\""},
		{head + "1\nl -1 5 ALLREDUCE\n", "w.txt:3: layer line has 4 fields"},
		{head + "1\nl -1 -5 ALLREDUCE 1024 1 NONE 0 1 NONE 0 100\n", "w.txt:3: forward compute time \"-5\""},
		{head + "1\nl -1 5 ALLREDUCE 1k 1 NONE 0 1 NONE 0 100\n", "w.txt:3: forward: communication size \"1k\""},
		{head + "2\n" + good, "w.txt: 2 layers announced, 1 given"},
		{head + "1\n" + good + good, "w.txt:4: more layer lines than the 1 announced"},
	} {
		_, err := Read("w.txt", strings.NewReader(c.in))
		var pe *Error
		if err == nil || !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q…", c.in, err, c.want)
		}
	}
}

// Groups that do not divide the GPUs, and pipeline parallelism, are
// errors naming the file.
func TestJobGroupErrors(t *testing.T) {
	for _, c := range []struct {
		w     Workload
		ranks int
		want  string
	}{
		{Workload{File: "a.txt", Policy: FwdInBckwd, TP: 8, EP: 1, PP: 1}, 12, "a.txt: model_parallel_NPU_group 8 does not divide the 12 GPUs"},
		{Workload{File: "a.txt", Policy: FwdInBckwd, TP: 4, EP: 3, PP: 1}, 32, "a.txt: ep 3 does not divide"},
		{Workload{File: "a.txt", Policy: FwdInBckwd, TP: 4, EP: 1, PP: 2}, 32, "a.txt: pp 2"},
	} {
		if _, err := c.w.Job(c.ranks); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v on %d: %v, want %q", c.w, c.ranks, err, c.want)
		}
	}
}

// The transformer loop: forward compute and communication of every
// layer in order, then backward with the weight gradient's collective
// depending on its compute and nothing depending on it.
func TestTransformerJob(t *testing.T) {
	w, err := ReadFile(filepath.Join(samples, "microAllReduce_dp.txt"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := w.Job(w.Ranks(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Ranks) != 16 {
		t.Fatalf("%d ranks", len(j.Ranks))
	}
	var ops []string
	for _, n := range j.Ranks[3] {
		ops = append(ops, n.Op.String())
	}
	// fwd: compute, AR (TP) ×2 layers; backward per layer: ig compute, wg
	// compute, wg AR (DP).
	want := "compute all_reduce compute all_reduce compute compute all_reduce compute compute all_reduce"
	if got := strings.Join(ops, " "); got != want {
		t.Errorf("rank 3 runs %s, want %s", got, want)
	}
	dependedOn := map[int]bool{}
	for _, n := range j.Ranks[3] {
		for _, d := range n.Deps {
			dependedOn[d] = true
		}
	}
	for _, n := range j.Ranks[3] {
		if strings.HasSuffix(n.Name, "wg DP") && dependedOn[n.ID] {
			t.Errorf("%s is waited for inside the step", n.Name)
		}
		if strings.HasSuffix(n.Name, "wg DP") && !slices.Equal(n.Group, []int{3, 11}) {
			t.Errorf("%s: group %v, want [3 11]", n.Name, n.Group)
		}
	}
	if _, err := job.Compile(j, 16); err != nil {
		t.Error(err)
	}
}
