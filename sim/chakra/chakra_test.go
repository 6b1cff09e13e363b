package chakra

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/sim/topo"
	"google.golang.org/protobuf/encoding/protowire"
)

// samples are the traces bundled with mrc (scenario/presets/chakra, whose
// README says what they are: one collective of 1 MiB per rank).
var samples = filepath.Join("..", "..", "scenario", "presets", "chakra")

// The bundled samples load, each rank with its one collective.
func TestLoadSamples(t *testing.T) {
	for _, c := range []struct {
		dir   string
		ranks int
		coll  Collective
	}{
		{"all_reduce/8npus_1MB", 8, AllReduce},
		{"all_reduce/16npus_1MB", 16, AllReduce},
		{"all_gather/8npus_1MB", 8, AllGather},
		{"all_to_all/8npus_1MB", 8, AllToAll},
		{"reduce_scatter/8npus_1MB", 8, ReduceScatter},
	} {
		traces, err := Load(filepath.Join(samples, c.dir))
		if err != nil {
			t.Fatal(err)
		}
		if len(traces) != c.ranks {
			t.Fatalf("%s: %d ranks, want %d", c.dir, len(traces), c.ranks)
		}
		for r, tr := range traces {
			if tr.Version != "0.0.4" || len(tr.Nodes) != 1 {
				t.Fatalf("%s rank %d: version %q, %d nodes", c.dir, r, tr.Version, len(tr.Nodes))
			}
			nd := tr.Nodes[0]
			if nd.Type != CommColl || nd.Coll != c.coll || nd.Bytes != 1<<20 || nd.CPU || len(nd.Deps) != 0 {
				t.Errorf("%s rank %d: %+v", c.dir, r, nd)
			}
		}
	}
	// A prefix, or any one rank's file, names the same series as its
	// directory.
	for _, name := range []string{"all_reduce", "all_reduce.5.et"} {
		traces, err := Load(filepath.Join(samples, "all_reduce", "8npus_1MB", name))
		if err != nil || len(traces) != 8 {
			t.Fatalf("by %s: %d traces, %v", name, len(traces), err)
		}
	}
}

// A hand-built trace, encoded with protowire field by field (not by this
// package), covers every field Parse reads and some it skips.
func TestParseHandBuilt(t *testing.T) {
	attr := func(name string, num protowire.Number, typ protowire.Type, val func([]byte) []byte) []byte {
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, name)
		b = protowire.AppendTag(b, 2, protowire.BytesType) // doc_string: skipped
		b = protowire.AppendString(b, "doc")
		b = protowire.AppendTag(b, num, typ)
		return val(b)
	}
	varint := func(v uint64) func([]byte) []byte {
		return func(b []byte) []byte { return protowire.AppendVarint(b, v) }
	}
	node := func(fields ...[]byte) []byte { return slices.Concat(fields...) }
	field := func(num protowire.Number, typ protowire.Type, val func([]byte) []byte) []byte {
		return val(protowire.AppendTag(nil, num, typ))
	}
	bytesOf := func(p []byte) func([]byte) []byte {
		return func(b []byte) []byte { return protowire.AppendBytes(b, p) }
	}
	var packed []byte
	for _, d := range []uint64{1, 2, 1} {
		packed = protowire.AppendVarint(packed, d)
	}
	var boolList []byte
	boolList = protowire.AppendTag(boolList, 1, protowire.BytesType)
	boolList = protowire.AppendBytes(boolList, []byte{1, 0, 1})

	meta := node(field(1, protowire.BytesType, bytesOf([]byte("0.0.4"))),
		field(9, protowire.VarintType, varint(7))) // an unknown field
	comp := node(field(1, protowire.VarintType, varint(1)),
		field(2, protowire.BytesType, bytesOf([]byte("gemm"))),
		field(3, protowire.VarintType, varint(uint64(Comp))),
		field(7, protowire.VarintType, varint(250)),
		field(8, protowire.BytesType, bytesOf([]byte("io info, skipped"))))
	coll := node(field(1, protowire.VarintType, varint(2)),
		field(2, protowire.BytesType, bytesOf([]byte("ar"))),
		field(3, protowire.VarintType, varint(uint64(CommColl))),
		field(4, protowire.VarintType, varint(1)), // ctrl dep, unpacked
		field(10, protowire.BytesType, bytesOf(attr("comm_type", 9, protowire.VarintType, varint(uint64(ReduceScatter))))),
		field(10, protowire.BytesType, bytesOf(attr("comm_size", 13, protowire.VarintType, varint(3<<20)))),
		field(10, protowire.BytesType, bytesOf(attr("pg_name", 29, protowire.BytesType, bytesOf([]byte("dp0"))))),
		field(10, protowire.BytesType, bytesOf(attr("involved_dim", 28, protowire.BytesType, bytesOf(boolList)))),
		field(10, protowire.BytesType, bytesOf(attr("is_cpu_op", 27, protowire.VarintType, varint(1)))),
		field(10, protowire.BytesType, bytesOf(attr("flops", 3, protowire.Fixed64Type, func(b []byte) []byte { return protowire.AppendFixed64(b, math.Float64bits(2.5)) }))))
	send := node(field(1, protowire.VarintType, varint(3)),
		field(2, protowire.BytesType, bytesOf([]byte("send"))),
		field(3, protowire.VarintType, varint(uint64(CommSend))),
		field(5, protowire.BytesType, bytesOf(packed)), // data deps, packed, with a repeat
		field(10, protowire.BytesType, bytesOf(attr("comm_dst", 15, protowire.VarintType, varint(protowire.EncodeZigZag(5))))),
		field(10, protowire.BytesType, bytesOf(attr("comm_tag", 23, protowire.Fixed32Type, func(b []byte) []byte { return protowire.AppendFixed32(b, uint32(0xffffffff)) }))),
		field(10, protowire.BytesType, bytesOf(attr("comm_size", 21, protowire.Fixed64Type, func(b []byte) []byte { return protowire.AppendFixed64(b, 4096) }))))

	var file []byte
	for _, m := range [][]byte{meta, comp, coll, send} {
		file = protowire.AppendBytes(file, m)
	}
	tr, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
	want := []Node{
		{ID: 1, Name: "gemm", Type: Comp, Duration: 250 * time.Microsecond},
		{ID: 2, Name: "ar", Type: CommColl, Deps: []uint64{1}, Coll: ReduceScatter, Bytes: 3 << 20,
			Group: "dp0", InvolvedDim: []bool{true, false, true}, CPU: true, has: hasCommType | hasCommSize},
		{ID: 3, Name: "send", Type: CommSend, Deps: []uint64{1, 2}, Dst: 5, Tag: -1, Bytes: 4096,
			has: hasCommDst | hasCommTag | hasCommSize},
	}
	if tr.Version != "0.0.4" || len(tr.Nodes) != len(want) {
		t.Fatalf("version %q, %d nodes", tr.Version, len(tr.Nodes))
	}
	for i := range want {
		g, w := tr.Nodes[i], want[i]
		if g.ID != w.ID || g.Name != w.Name || g.Type != w.Type || !slices.Equal(g.Deps, w.Deps) ||
			g.Duration != w.Duration || g.Coll != w.Coll || g.Bytes != w.Bytes || g.Src != w.Src ||
			g.Dst != w.Dst || g.Tag != w.Tag || g.Group != w.Group || !slices.Equal(g.InvolvedDim, w.InvolvedDim) ||
			g.CPU != w.CPU || g.has != w.has {
			t.Errorf("node %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestParseErrors(t *testing.T) {
	meta := protowire.AppendBytes(nil, protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "0.0.4"))
	badAttr := protowire.AppendTag(nil, 10, protowire.BytesType)
	inner := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "comm_size")
	inner = protowire.AppendString(protowire.AppendTag(inner, 29, protowire.BytesType), "big")
	badAttr = protowire.AppendBytes(badAttr, inner)
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"truncated length", []byte{0x80}, "truncated length"},
		{"length past the end", append(slices.Clone(meta), 0x05, 0x08), "runs past the end"},
		{"bad tag", append(slices.Clone(meta), 0x01, 0x00), "message 1"},
		{"wrong wire type", append(slices.Clone(meta), protowire.AppendBytes(nil, protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "x"))...), "want a varint"},
		{"attribute of the wrong type", append(slices.Clone(meta), protowire.AppendBytes(nil, badAttr)...), "comm_size is a string"},
	} {
		_, err := Parse(c.b)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrFormat containing %q", c.name, err, c.want)
		}
	}
}

func TestCheckErrors(t *testing.T) {
	coll := func(id uint64, deps ...uint64) Node {
		return Node{ID: id, Name: "c", Type: CommColl, Deps: deps, Bytes: 1, has: hasCommType | hasCommSize}
	}
	for _, c := range []struct {
		name  string
		nodes []Node
		want  string
	}{
		{"duplicate id", []Node{coll(1), coll(1)}, "used by another node"},
		{"missing dependency", []Node{coll(1, 9)}, "depends on node 9"},
		{"cycle", []Node{coll(1, 3), coll(2, 1), coll(3, 2)}, "dependency cycle"},
		{"self loop", []Node{coll(1, 1)}, "dependency cycle"},
		{"memory node", []Node{{ID: 1, Name: "ld", Type: MemLoad}}, "MEM_LOAD_NODE cannot run"},
		{"invalid node", []Node{{ID: 1, Name: "x", Type: Invalid}}, "INVALID_NODE cannot run"},
		{"collective without a size", []Node{{ID: 1, Name: "ar", Type: CommColl, has: hasCommType}}, "comm_type and comm_size"},
		{"send without a peer", []Node{{ID: 1, Name: "s", Type: CommSend, has: hasCommSize}}, "comm_dst"},
		{"receive without a peer", []Node{{ID: 1, Name: "r", Type: CommRecv, has: hasCommSize}}, "comm_src"},
	} {
		err := (&Trace{Nodes: c.nodes}).Check()
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrFormat containing %q", c.name, err, c.want)
		}
	}
	ok := &Trace{Nodes: []Node{coll(1), coll(2, 1), coll(3, 1, 2)}}
	if err := ok.Check(); err != nil {
		t.Errorf("a diamond: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	sample, err := os.ReadFile(filepath.Join(samples, "all_reduce", "8npus_1MB", "all_reduce.0.et"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "found 0") {
		t.Errorf("empty directory: %v", err)
	}
	write("job.0.et", sample)
	write("job.2.et", sample)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "rank 1 has no trace file") {
		t.Errorf("a missing rank: %v", err)
	}
	write("job.1.et", sample[:len(sample)-3])
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "job.1.et (rank 1)") {
		t.Errorf("a truncated rank: %v", err)
	}
	write("other.0.et", sample)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "found 2") {
		t.Errorf("two series: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "nothing")); err == nil || !strings.Contains(err.Error(), "no trace files") {
		t.Errorf("an unknown prefix: %v", err)
	}
}

// The samples become one-step jobs whose ranks send over the fabric what
// NCCL's ring (or all-to-all) moves for the trace's 1 MiB: 2(n−1)/n of it
// for an all-reduce, (n−1)/n for the others. Each job then runs to its
// end over MRC on a small two-tier fabric.
func TestSamplesRunAsJobs(t *testing.T) {
	const size = 1 << 20
	for _, c := range []struct {
		dir    string
		ranks  int
		factor float64 // bytes each rank sends, in units of size×(n−1)/n
	}{
		{"all_reduce/8npus_1MB", 8, 2},
		{"all_reduce/16npus_1MB", 16, 2},
		{"all_gather/8npus_1MB", 8, 1},
		{"all_to_all/8npus_1MB", 8, 1},
		{"reduce_scatter/8npus_1MB", 8, 1},
	} {
		j, err := LoadJob(filepath.Join(samples, c.dir))
		if err != nil {
			t.Fatal(err)
		}
		j.GPUsPerServer = 1 // every transfer on the fabric
		plan, err := job.Compile(*j, c.ranks)
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		sent := make([]uint64, c.ranks)
		for _, f := range plan.Workload.Flows {
			sent[f.Src] += f.Size
		}
		want := c.factor * size * float64(c.ranks-1) / float64(c.ranks)
		for r, b := range sent {
			if math.Abs(float64(b)-want) > float64(c.ranks) {
				t.Errorf("%s: rank %d sends %d bytes, want %.0f", c.dir, r, b, want)
			}
		}
		tp, err := topo.Clos2(topo.Clos2Config{Hosts: c.ranks, T0Down: 4, T0Up: 4})
		if err != nil {
			t.Fatal(err)
		}
		w, err := sim.New(sim.Config{Topology: tp, Workload: plan.Workload, Job: plan, Transport: sim.MRC(), Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		res, err := w.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Job == nil || res.Job.StepsDone != 1 || res.FlowsCompleted != len(plan.Workload.Flows) {
			t.Errorf("%s: %d of %d flows, job %+v", c.dir, res.FlowsCompleted, len(plan.Workload.Flows), res.Job)
		}
	}
}

func TestJobErrors(t *testing.T) {
	coll := func(c Collective) Node {
		return Node{ID: 1, Name: "c", Type: CommColl, Coll: c, Bytes: 1, has: hasCommType | hasCommSize}
	}
	grouped := coll(AllReduce)
	grouped.Group = "tp0"
	partial := coll(AllReduce)
	partial.InvolvedDim = []bool{true, false}
	for _, c := range []struct {
		name string
		node Node
		want string
	}{
		{"broadcast", coll(Broadcast), "collective BROADCAST is not supported"},
		{"process group", grouped, `process group "tp0"`},
		{"part of the topology", partial, "involved_dim"},
		{"send to itself", Node{ID: 1, Name: "s", Type: CommSend, Dst: 1, Bytes: 1}, "comm_dst 1 is not another rank"},
		{"receive from outside", Node{ID: 1, Name: "r", Type: CommRecv, Src: 9, Bytes: 1}, "comm_src 9 is not another rank"},
	} {
		traces := []*Trace{{Nodes: []Node{coll(AllReduce)}}, {Nodes: []Node{c.node}}}
		_, err := Job(traces)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "rank 1: node 1") {
			t.Errorf("%s: %v, want an error naming rank 1, node 1 and %q", c.name, err, c.want)
		}
	}
}
