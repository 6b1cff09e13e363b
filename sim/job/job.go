// Package job models a training job as NCCL runs it: ranks (GPUs) that
// run steps of compute phases and collectives with dependencies, placed
// onto the simulated hosts in servers that share a scale-up domain, with
// persistent connections between ranks. Compile turns a Job into a
// workload.Workload of flows and triggers (the simulator's machinery) and
// a Plan that reads the step and collective times back out of a run.
//
// A trace importer (SimAI text, Chakra) builds a Job by filling Ranks:
// per rank, the nodes of one step in any order, each with an ID unique
// on its rank and the IDs of the nodes of the same rank it waits for.
package job

import (
	"fmt"
	"time"

	"github.com/openmrc/mrc/mtime"
)

// Op is what a node does.
type Op uint8

const (
	// Compute occupies the rank's GPU for Duration.
	Compute Op = iota + 1
	// AllReduce, AllGather and ReduceScatter run as NCCL's ring
	// algorithm over Group; AllToAll sends Bytes/len(Group) to every
	// other member at once.
	AllReduce
	AllGather
	ReduceScatter
	AllToAll
	// Send sends Bytes to rank Peer; it pairs with that rank's Recv
	// whose Peer is this rank and whose Tag is the same, in order.
	Send
	Recv
)

var opNames = [...]string{Compute: "compute", AllReduce: "all_reduce", AllGather: "all_gather",
	ReduceScatter: "reduce_scatter", AllToAll: "all_to_all", Send: "send", Recv: "recv"}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Collective reports whether o is a group collective.
func (o Op) Collective() bool { return o >= AllReduce && o <= AllToAll }

// Node is one operation of one rank in one step.
type Node struct {
	// ID names the node on its rank (> 0, distinct on the rank).
	ID   int
	Op   Op
	Name string // for results (e.g. the layer); collectives with the same name are reported together
	// Duration is a Compute node's time on the GPU.
	Duration mtime.Picos
	// Bytes is a collective's size as NCCL-tests counts it: all-reduce
	// the buffer, all-gather the output (every rank's share), reduce-
	// scatter the input, all-to-all what each rank sends in total
	// (including its own share). Send/Recv: the message.
	Bytes uint64
	// Group lists a collective's ranks in ring order (nil: every rank).
	// The k-th collective of a group (the same set of ranks) on each of
	// its members is one collective: their Op and Bytes must agree.
	Group []int
	// Peer is a Send's destination or a Recv's source; Tag tells apart
	// messages between the same pair (matched in order per tag).
	Peer int
	Tag  int
	// Deps are the IDs of nodes of the same rank that must finish
	// before this one starts.
	Deps []int
	// Algorithm is a collective's algorithm ("": the job's).
	Algorithm Algorithm
}

// Algorithm names how an all-reduce, all-gather or reduce-scatter moves
// its data.
type Algorithm string

const (
	// Ring is NCCL's ring (the default): 2(n−1) steps for an
	// all-reduce, n−1 for the others, each of S/n per rank, chunks
	// pipelined from step to step.
	Ring Algorithm = "ring"
	// HalvingDoubling is recursive halving for the reduce-scatter
	// (log₂ n exchanges with the partner at distance n/2, n/4, …, 1,
	// each of half the data before) and recursive doubling for the
	// all-gather (distance 1, 2, …, n/2, each of twice the data), an
	// all-reduce being both: Rabenseifner's all-reduce, as MPICH runs
	// it (Thakur, Rabenseifner and Gropp, "Optimization of collective
	// communication operations in MPICH", IJHPCA 2005). The group's
	// size must be a power of two.
	HalvingDoubling Algorithm = "halving_doubling"
)

// Placement names how ranks map onto hosts.
type Placement string

const (
	// Packed puts rank r on host r: a server's ranks on consecutive
	// hosts (the default).
	Packed Placement = "packed"
	// Random shuffles ranks over the hosts (seeded by Job.Seed).
	Random Placement = "random"
	// Rail puts local GPU k of every server on the same T0 (a rail):
	// rank r of server s = r / GPUsPerServer, k = r % GPUsPerServer, is
	// host k × servers + s.
	Rail Placement = "rail"
)

// ScaleUp is the server's scale-up domain (NVLink-class): each GPU's
// bandwidth to the others in its server and the latency of a transfer.
type ScaleUp struct {
	BitsPerSec int64
	Latency    time.Duration
}

// DefaultScaleUp is an NVLink 4 (H100 SXM) GPU: 450 GB/s per direction
// (900 GB/s bidirectional, NVIDIA's H100 datasheet) and about 1 µs
// of latency per transfer (docs/workloads.md).
var DefaultScaleUp = ScaleUp{BitsPerSec: 3_600_000_000_000, Latency: time.Microsecond}

// Job is a training job: the nodes each rank runs in one step, how many
// steps, and how the job maps onto the fabric and its connections. Zero
// fields take the defaults in their comments.
type Job struct {
	Name string
	// Ranks[r] is rank r's nodes of one step. Step k+1 of a rank starts
	// when every node of its step k has finished.
	Ranks [][]Node
	Steps int // default 1
	// Placement of ranks onto hosts (default Packed); Seed draws Random.
	Placement Placement
	Seed      uint64
	// GPUsPerServer ranks share a server and its scale-up domain
	// (default 8): ranks r and q are in the same server if
	// r/GPUsPerServer == q/GPUsPerServer. A transfer between two ranks
	// of a server takes ScaleUp, not the fabric.
	GPUsPerServer int
	ScaleUp       ScaleUp // default DefaultScaleUp
	// Channels is how many rings (NCCL channels) a collective is split
	// over (default 1); Chunks how many pieces each ring step of a
	// channel is cut into and pipelined (default 4): a rank forwards a
	// chunk as soon as it has received it.
	Channels int
	Chunks   int
	// ReadyLatency is how long a rank's readiness takes to reach the
	// rank that sends to it over the fabric (NCCL's receiver posting
	// its buffer to the sender): the first transfer of a collective
	// into a rank leaves that long after the rank has started the
	// collective (inside a server, ScaleUp.Latency after). 0: at once;
	// the scenario sets the fabric's one-way time for a small packet.
	ReadyLatency time.Duration
	// Algorithm is the collectives' default algorithm (default Ring;
	// all-to-all and send/recv have one way only).
	Algorithm Algorithm
	// QPsPerConnection is NCCL_IB_QPS_PER_CONNECTION (default 1): each
	// (rank pair, channel) connection has this many QPs, created once
	// at job start and reused by every step; each chunk is split evenly
	// over them.
	QPsPerConnection int
}
