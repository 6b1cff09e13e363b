package chakra

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/job"
)

// LoadJob reads a job's traces (Load) and turns them into a training job
// of one step per trace (Job), named after the series. Errors name the
// file or the rank and the node.
func LoadJob(name string) (*job.Job, error) {
	traces, err := Load(name)
	return jobOf(traces, name, err)
}

// LoadJobFS is LoadJob in fsys (LoadFS).
func LoadJobFS(fsys fs.FS, name, display string) (*job.Job, error) {
	traces, err := LoadFS(fsys, name, display)
	if display == "" {
		display = name
	}
	return jobOf(traces, display, err)
}

func jobOf(traces []*Trace, name string, err error) (*job.Job, error) {
	if err != nil {
		return nil, err
	}
	j, err := Job(traces)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	j.Name = path.Base(filepath.ToSlash(name))
	return j, nil
}

// Job turns one checked trace per rank into a job whose step is the
// traces' graphs (docs/workloads.md#chakra-execution-traces):
//   - COMP_NODE: compute for its duration;
//   - COMM_COLL_NODE: ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER and
//     ALL_TO_ALL over every rank, comm_size bytes as NCCL-tests counts a
//     collective (the buffer; all-gather's output, reduce-scatter's input,
//     all-to-all's total per rank), which is what ASTRA-sim's traces carry;
//   - COMM_SEND_NODE and COMM_RECV_NODE: a message to comm_dst or from
//     comm_src, matched by comm_tag;
//   - METADATA_NODE: nothing, but nodes may wait for it.
//
// Other collectives, process groups (pg_name) and collectives on part of
// the topology (involved_dim with a false entry) are not supported yet,
// and peers outside the job are errors; each names the rank and the node.
func Job(traces []*Trace) (*job.Job, error) {
	j := &job.Job{Ranks: make([][]job.Node, len(traces))}
	for r, t := range traces {
		nodes := make([]job.Node, 0, len(t.Nodes))
		for i := range t.Nodes {
			n, err := jobNode(&t.Nodes[i], r, len(traces))
			if err != nil {
				return nil, fmt.Errorf("rank %d: node %d (%s): %w", r, t.Nodes[i].ID, t.Nodes[i].Name, err)
			}
			nodes = append(nodes, n)
		}
		j.Ranks[r] = nodes
	}
	return j, nil
}

// jobOps maps the collectives the job model runs.
var jobOps = map[Collective]job.Op{
	AllReduce: job.AllReduce, AllGather: job.AllGather,
	ReduceScatter: job.ReduceScatter, AllToAll: job.AllToAll,
}

// jobNode converts one node of rank r of a job of n ranks. Chakra IDs
// start at 0 and the job's at 1, so every ID moves up by one.
func jobNode(nd *Node, r, n int) (job.Node, error) {
	out := job.Node{ID: int(nd.ID) + 1, Name: nd.Name, Deps: make([]int, len(nd.Deps))}
	for i, d := range nd.Deps {
		out.Deps[i] = int(d) + 1
	}
	if nd.ID >= 1<<62 || slices.ContainsFunc(nd.Deps, func(d uint64) bool { return d >= 1<<62 }) {
		return out, fmt.Errorf("node ids above 2^62 are not supported")
	}
	peer := func(p int64, what string) (int, error) {
		if p < 0 || p >= int64(n) || p == int64(r) {
			return 0, fmt.Errorf("%s %d is not another rank of the job (0..%d)", what, p, n-1)
		}
		return int(p), nil
	}
	var err error
	switch nd.Type {
	case Metadata:
		out.Op = job.Compute
	case Comp:
		out.Op, out.Duration = job.Compute, mtime.PicosOf(nd.Duration)
	case CommColl:
		op, ok := jobOps[nd.Coll]
		switch {
		case !ok:
			return out, fmt.Errorf("collective %v is not supported (supported: ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL)", nd.Coll)
		case nd.Group != "":
			return out, fmt.Errorf("process group %q: process groups are not supported yet (a collective spans every rank)", nd.Group)
		case slices.Contains(nd.InvolvedDim, false):
			return out, fmt.Errorf("involved_dim %v: collectives on part of the topology are not supported yet", nd.InvolvedDim)
		}
		out.Op, out.Bytes = op, nd.Bytes
	case CommSend:
		out.Op, out.Bytes, out.Tag = job.Send, nd.Bytes, int(nd.Tag)
		out.Peer, err = peer(nd.Dst, "comm_dst")
	case CommRecv:
		out.Op, out.Bytes, out.Tag = job.Recv, nd.Bytes, int(nd.Tag)
		out.Peer, err = peer(nd.Src, "comm_src")
	default:
		err = fmt.Errorf("node type %v cannot run in a network simulation", nd.Type)
	}
	return out, err
}
