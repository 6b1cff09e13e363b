// Package scenario reads the scenario files `mrc sim` runs (YAML, described
// key by key in docs/scenario.md), holds the built-in presets, turns a
// scenario into simulator configurations (package sim), and runs it once
// per transport into a report (package report), with the packet captures
// and traces it asks for.
//
//	s, err := scenario.Load("examples/incast.yaml") // errors name file:line
//	p, err := s.Build()
//	rep, err := scenario.Run(ctx, p, scenario.RunOptions{})
//
// Errors in a scenario are *Error values: one line, naming the file and
// line where there is one.
package scenario

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// Scenario is one experiment: a fabric, the transports to compare on it,
// a workload, failures and what to write out. Zero fields take the
// defaults docs/scenario.md lists.
type Scenario struct {
	// Name labels the results (default: the file's base name).
	Name string `yaml:"name"`
	// Description is one line, shown by `mrc sim --list`; Notes are a
	// few lines printed under the results table, saying what to look at.
	Description string `yaml:"description"`
	Notes       string `yaml:"notes"`
	// Slow marks a scenario that takes minutes (shown by --list).
	Slow bool `yaml:"slow"`
	// Seed makes the run reproducible (default 1).
	Seed *uint64 `yaml:"seed"`
	// Duration bounds simulated time (default 1s).
	Duration   Duration      `yaml:"duration"`
	Topology   Topology      `yaml:"topology"`
	Transports []Transport   `yaml:"transports"`
	Workload   WorkloadParts `yaml:"workload"`
	Failures   []Failure     `yaml:"failures"`
	Queues     Queues        `yaml:"queues"`
	Sim        SimOptions    `yaml:"sim"`
	Outputs    Outputs       `yaml:"outputs"`

	src source // where it was read from, for errors and relative paths
}

// Topology is the fabric.
type Topology struct {
	// Kind is clos2 (multi-plane two-tier Clos; one plane is a
	// leaf-spine), clos3 (single-plane three-tier fat tree) or htsim (an
	// htsim .topo file). Default clos2, or htsim when File is set.
	Kind string `yaml:"kind"`
	// File is an htsim .topo file, relative to the scenario file.
	File   string `yaml:"file"`
	Hosts  int    `yaml:"hosts"`
	Planes int    `yaml:"planes"`
	// T0Down host ports and T0Up uplinks per T0 (T0Up is the number of
	// T1s per plane); Radix alone means Radix/2 each.
	T0Down int `yaml:"t0_down"`
	T0Up   int `yaml:"t0_up"`
	Radix  int `yaml:"radix"`
	// PodSize (hosts per pod) and T1Up (uplinks per T1): clos3 only.
	PodSize int `yaml:"pod_size"`
	T1Up    int `yaml:"t1_up"`
	// HostRate is the speed of a NIC port and its link; FabricRate of the
	// switch-to-switch links (default HostRate).
	HostRate   Rate `yaml:"host_rate"`
	FabricRate Rate `yaml:"fabric_rate"`
	// Delays: host links, switch-to-switch links, switch forwarding.
	HostDelay     Duration `yaml:"host_delay"`
	FabricDelay   Duration `yaml:"fabric_delay"`
	SwitchLatency Duration `yaml:"switch_latency"`
}

// Transport is one transport to run the scenario with: a built-in by
// name, or a variant of one. In YAML, either a name or a mapping.
type Transport struct {
	// Name labels it in the results; Base is the built-in it derives
	// from (default Name).
	Name string `yaml:"name"`
	Base string `yaml:"base"`
	// Fabric is the switches' forwarding: srv6 (uSID paths; transports
	// running the MRC core only) or ecmp.
	Fabric string `yaml:"fabric"`
	// Trim, ECNLastHop and Lossless override the switch features the
	// base transport asks for.
	Trim       *bool `yaml:"trim"`
	ECNLastHop *bool `yaml:"ecn_last_hop"`
	Lossless   *bool `yaml:"lossless"`
	// EV overrides fields of the base's EV profile (MRC-core transports).
	EV *EVProfile `yaml:"ev"`
	// TCP overrides the TCP parameters (tcp and dctcp).
	TCP *TCPParams `yaml:"tcp"`
	// IB overrides the InfiniBand parameters (ib and ib-ar).
	IB *IBParams `yaml:"ib"`
	// MPTCP overrides the MPTCP parameters (mptcp).
	MPTCP *MPTCPParams `yaml:"mptcp"`

	line int
}

// IBParams are the InfiniBand baseline's parameters in YAML (package ib's
// Config and the fabric's credits and routing); zero fields keep the
// base's (docs/ib.md).
type IBParams struct {
	// Routing: static (D-mod-k forwarding tables) or adaptive.
	Routing string `yaml:"routing"`
	// CC: none or fecn (IB's congestion control annex).
	CC            string   `yaml:"cc"`
	FECNThreshold Size     `yaml:"fecn_threshold"`
	CCTIIncrease  int      `yaml:"ccti_increase"`
	CCTITimer     Duration `yaml:"ccti_timer"`
	CCTIMin       int      `yaml:"ccti_min"`
	// Timeout is the local ACK timeout exponent (4.096 µs × 2^timeout).
	Timeout       int      `yaml:"timeout"`
	RetryCount    *int     `yaml:"retry_count"`
	Buffer        Size     `yaml:"buffer"`
	ReorderWindow int      `yaml:"reorder_window"`
	Reroute       Duration `yaml:"reroute"`
}

// TCPParams are tcp.Config's parameters in YAML; zero fields keep the
// base's (docs/tcp.md).
type TCPParams struct {
	MinRTO     Duration `yaml:"min_rto"`
	MaxRTO     Duration `yaml:"max_rto"`
	InitialRTO Duration `yaml:"initial_rto"`
	InitCwnd   int      `yaml:"init_cwnd"`
	DupThresh  int      `yaml:"dupthresh"`
	MSS        int      `yaml:"mss"`
	RACK       *bool    `yaml:"rack"`
	DelayedACK *bool    `yaml:"delayed_ack"`
	DelAck     Duration `yaml:"delack"`
}

// MPTCPParams are mptcp.Config's parameters in YAML: the number of
// subflows, the congestion control (lia, olia or uncoupled) and the
// subflows' TCP parameters; zero fields keep the base's (docs/mptcp.md).
type MPTCPParams struct {
	Subflows  int    `yaml:"subflows"`
	CC        string `yaml:"cc"`
	TCPParams `yaml:",inline"`
}

// EVProfile is mrc.EVProfile in YAML; zero fields keep the base's.
type EVProfile struct {
	ActivePerPlane   int      `yaml:"active_per_plane"`
	BackupPerPlane   int      `yaml:"backup_per_plane"`
	PathsPerPlane    int      `yaml:"paths_per_plane"`
	MinActive        int      `yaml:"min_active"`
	Skip             Duration `yaml:"skip"`
	ProbeInterval    Duration `yaml:"probe_interval"`
	ProbeIntervalMax Duration `yaml:"probe_interval_max"`
	ProbeSuccesses   int      `yaml:"probe_successes"`
	Oblivious        *bool    `yaml:"oblivious"`
	REPS             *bool    `yaml:"reps"`
	Mixed            *bool    `yaml:"mixed"`
}

// WorkloadParts is the workload: one part (a YAML mapping) or several
// (a sequence), whose flows run together.
type WorkloadParts []WorkloadPart

// WorkloadPart is one traffic pattern.
type WorkloadPart struct {
	// Kind: permutation, all_to_all, incast, ring_allreduce, flows,
	// htsim (a connection matrix, File), or a training job: training
	// (Ops), simai (a SimAI workload, File) or ring_allreduce.
	Kind string `yaml:"kind"`
	// Hosts is how many hosts take part: hosts 0..Hosts-1 (default all;
	// Offset shifts them).
	Hosts  int `yaml:"hosts"`
	Offset int `yaml:"offset"`
	// Size is the bytes of each flow (ring_allreduce: of the buffer).
	Size Size `yaml:"size"`
	// Senders: incast senders (default Hosts-1), hosts 1..Senders to 0.
	Senders int `yaml:"senders"`
	// Victim: incast's victim flow, tagged "victim".
	Victim *Victim `yaml:"victim"`
	// Parallel: all_to_all starts every flow at once (default true);
	// false sends to the others one after another.
	Parallel *bool `yaml:"parallel"`
	// Chunks: ring_allreduce pipelining (default 4).
	Chunks int `yaml:"chunks"`
	// Start delays the part's flows (those not started by a trigger).
	Start Duration `yaml:"start"`
	// Tag labels the part's flows in the results.
	Tag string `yaml:"tag"`
	// File: htsim .cm connection matrix, relative to the scenario file.
	File string `yaml:"file"`
	// Flows: kind flows.
	Flows []FlowSpec `yaml:"flows"`

	// A training job's steps, placement, servers and connections
	// (kinds training, simai, ring_allreduce; package sim/job,
	// docs/workloads.md); zero fields take sim/job's defaults.
	Steps            int      `yaml:"steps"`
	Placement        string   `yaml:"placement"`
	GPUsPerServer    int      `yaml:"gpus_per_server"`
	ScaleUpRate      Rate     `yaml:"scale_up_rate"`
	ScaleUpLatency   Duration `yaml:"scale_up_latency"`
	Channels         int      `yaml:"channels"`
	QPsPerConnection int      `yaml:"qps_per_connection"`
	// Algorithm: the collectives' default algorithm, ring or
	// halving_doubling.
	Algorithm string `yaml:"algorithm"`
	// Ops: kind training, what every rank runs in a step, in order.
	Ops []OpSpec `yaml:"ops"`

	line int
}

// OpSpec is one operation of a kind-training step.
type OpSpec struct {
	// Op: compute, all_reduce, all_gather, reduce_scatter, all_to_all.
	Op       string   `yaml:"op"`
	Duration Duration `yaml:"duration"` // compute
	Size     Size     `yaml:"size"`     // collectives: NCCL-tests' size
	// GroupSize splits the ranks into groups of this size (default all
	// ranks): consecutive ranks (like tensor parallelism), or with
	// Strided the ranks that share an index modulo ranks/GroupSize
	// (like data parallelism).
	GroupSize int  `yaml:"group_size"`
	Strided   bool `yaml:"strided"`
	// Async: later operations of the step do not wait for this one.
	Async bool   `yaml:"async"`
	Name  string `yaml:"name"`
	// Algorithm: a collective's algorithm (default the job's).
	Algorithm string `yaml:"algorithm"`
}

// Victim is an incast's victim flow.
type Victim struct {
	Src int `yaml:"src"`
	Dst int `yaml:"dst"`
}

// FlowSpec is one flow of a kind-flows workload.
type FlowSpec struct {
	ID    int      `yaml:"id"` // default: its position, from 1
	Src   int      `yaml:"src"`
	Dst   int      `yaml:"dst"`
	Size  Size     `yaml:"size"`
	Start Duration `yaml:"start"`
	// After starts the flow when flow After's bytes are all
	// acknowledged (instead of at Start).
	After int    `yaml:"after"`
	Tag   string `yaml:"tag"`
}

// Failure is a scheduled failure (sim.Failure).
type Failure struct {
	Kind     string   `yaml:"kind"`
	Element  string   `yaml:"element"`
	Count    int      `yaml:"count"`
	At       Duration `yaml:"at"`
	Until    Duration `yaml:"until"`
	Loss     float64  `yaml:"loss"`
	FlapRate float64  `yaml:"flap_rate"`
	DownFor  Duration `yaml:"down_for"`
	// Compress (default 1) and Classes are for kind mtbf: a fault process
	// drawn from the fabric's parts (package faults, docs/failures.md).
	Compress *float64             `yaml:"compress"`
	Classes  map[string]ClassSpec `yaml:"classes"`
}

// Queues sizes every switch port's queues (sim.QueueSpec); zero fields
// derive from the fabric's bandwidth-delay product.
type Queues struct {
	Buffer        Size `yaml:"buffer"`
	HeaderBuffer  Size `yaml:"header_buffer"`
	TrimAt        Size `yaml:"trim_at"`
	LastHopTrimAt Size `yaml:"last_hop_trim_at"`
	TrimTo        Size `yaml:"trim_to"`
	ECNMin        Size `yaml:"ecn_min"`
	ECNMax        Size `yaml:"ecn_max"`
	ECNK          Size `yaml:"ecn_k"`
	PFCXoff       Size `yaml:"pfc_xoff"`
	PFCXon        Size `yaml:"pfc_xon"`
}

// SimOptions are the simulator's knobs (sim.Config).
type SimOptions struct {
	MTU              int      `yaml:"mtu"`
	EthernetOverhead *int     `yaml:"ethernet_overhead"`
	Reconvergence    Duration `yaml:"reconvergence"`
	LocalRepair      Duration `yaml:"local_repair"`
	SampleEvery      Duration `yaml:"sample_every"`
	SeriesFlows      int      `yaml:"series_flows"`
	Workers          int      `yaml:"workers"`
	HostGroups       int      `yaml:"host_groups"`
	SwitchGroups     int      `yaml:"switch_groups"`
}

// Outputs are the files a run writes (command-line flags override
// them). Paths are relative to the working directory.
type Outputs struct {
	JSON        string   `yaml:"json"` // "-": standard output
	CSV         string   `yaml:"csv"`  // directory
	Plot        string   `yaml:"plot"` // directory
	Flows       bool     `yaml:"flows"`
	Pcap        string   `yaml:"pcap"`
	PcapFilter  string   `yaml:"pcap_filter"`
	Capture     []string `yaml:"capture"`
	Trace       string   `yaml:"trace"`
	TraceFilter string   `yaml:"trace_filter"`
}

// Duration is a time.Duration written as "40us", "1.5ms", "0".
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Rate is a speed in bits per second, written as "100G", "400Gb/s",
// "800Gbps" or "25e9b/s".
type Rate int64

// Size is a byte count, written as "4096", "2MB" (10^6), "2MiB" (2^20).
type Size uint64

// source is where a scenario came from.
type source struct {
	file string     // name for messages: a path, or "preset NAME"
	dir  string     // directory relative inputs are resolved against
	fsys fsOpener   // embedded presets; nil: the file system
	root *yaml.Node // the document, for line numbers
}
