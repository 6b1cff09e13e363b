// Package chakra reads MLCommons Chakra execution traces: the per-rank
// `.et` files ASTRA-sim 2 runs (docs/workloads.md#chakra-execution-traces). A file is a
// stream of protobuf messages, each preceded by its length as a varint:
// one GlobalMetadata, then the rank's Nodes. Only what a network simulator
// needs is kept: compute nodes and their durations, collectives (type,
// size, process group), point-to-point sends and receives (peer, size,
// tag), and the dependency edges between nodes.
//
// The schema is mlcommons/chakra's et_def.proto (Apache-2.0); this decoder
// is written from the field numbers it documents, with protowire, and
// generates no code.
package chakra

import (
	"errors"
	"fmt"
	"time"
)

// NodeType is a node's kind (et_def.proto NodeType).
type NodeType uint8

// The node types. MemLoad and MemStore are read but a simulation of the
// network cannot run them (Trace.Check refuses them).
const (
	Invalid  NodeType = 0
	Metadata NodeType = 1
	MemLoad  NodeType = 2
	MemStore NodeType = 3
	Comp     NodeType = 4
	CommSend NodeType = 5
	CommRecv NodeType = 6
	CommColl NodeType = 7
)

var nodeTypeNames = [...]string{"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE",
	"COMP_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"}

func (t NodeType) String() string {
	if int(t) < len(nodeTypeNames) {
		return nodeTypeNames[t]
	}
	return fmt.Sprintf("NodeType(%d)", uint8(t))
}

// Collective is a COMM_COLL node's operation (et_def.proto
// CollectiveCommType).
type Collective uint8

// The collectives.
const (
	AllReduce          Collective = 0
	Reduce             Collective = 1
	AllGather          Collective = 2
	Gather             Collective = 3
	Scatter            Collective = 4
	Broadcast          Collective = 5
	AllToAll           Collective = 6
	ReduceScatter      Collective = 7
	ReduceScatterBlock Collective = 8
	Barrier            Collective = 9
)

var collectiveNames = [...]string{"ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER",
	"BROADCAST", "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"}

func (c Collective) String() string {
	if int(c) < len(collectiveNames) {
		return collectiveNames[c]
	}
	return fmt.Sprintf("Collective(%d)", uint8(c))
}

// Node is one node of a rank's graph.
type Node struct {
	ID   uint64
	Name string
	Type NodeType
	// Deps are the nodes this one waits for: its control and data
	// dependencies, in file order, without repeats.
	Deps []uint64
	// Duration is a compute node's run time (duration_micros).
	Duration time.Duration

	// Communication attributes; HasComm says which were present.
	Coll  Collective // comm_type, COMM_COLL
	Bytes uint64     // comm_size
	Src   int64      // comm_src, COMM_RECV: the sending rank
	Dst   int64      // comm_dst, COMM_SEND: the receiving rank
	Tag   int64      // comm_tag: matches a send to its receive
	// Group is the process group (pg_name); empty means every rank.
	Group string
	// InvolvedDim says which dimensions of the scale-out topology a
	// collective spans (involved_dim); nil when absent.
	InvolvedDim []bool
	// CPU reports is_cpu_op: the op runs on the host, not the GPU.
	CPU bool

	has attrSet
}

// attrSet records which communication attributes a node carried.
type attrSet uint8

const (
	hasCommType attrSet = 1 << iota
	hasCommSize
	hasCommSrc
	hasCommDst
	hasCommTag
)

// Trace is one rank's execution trace.
type Trace struct {
	// Version is the schema version GlobalMetadata names (e.g. "0.0.4").
	Version string
	Nodes   []Node
}

// ErrFormat is wrapped by every error about a trace's contents.
var ErrFormat = errors.New("chakra: bad trace")
