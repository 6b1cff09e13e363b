package sim

import (
	"fmt"
	"time"

	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/trace"
)

// Config is one simulation: a fabric, a workload, a transport, failures
// and a seed. Zero fields take the defaults in their comments. A run is a
// function of the Config; Workers changes only how fast it goes.
type Config struct {
	// Name labels the scenario in results.
	Name     string
	Topology *topo.Topology
	Workload *workload.Workload
	// Job, when set, is the training job (package sim/job) that
	// compiled into Workload: the result then has its steps and
	// collectives (Result.Job).
	Job       *job.Plan
	Transport Transport
	Seed      uint64
	// MTU is the payload of one data packet (default 4096).
	MTU int
	// EthernetOverhead is added to every packet's IP length to get the
	// bytes it occupies on the wire: Ethernet header, FCS, preamble and
	// inter-packet gap (default 38; negative means 0).
	EthernetOverhead int
	// Queue sizes the switch queues (defaults from the fabric's
	// bandwidth-delay product, see QueueSpec).
	Queue QueueSpec
	// Failures happen on a schedule.
	Failures []Failure
	// Reconvergence is how long an ECMP fabric's routing takes to stop
	// using a failed link or switch, and to use a repaired one (default
	// 1 s: BGP timescales). Traffic hashed onto a dead link meanwhile is
	// lost. SRv6 fabrics have static routes and never reconverge.
	Reconvergence time.Duration
	// LocalRepair is how long a link of an ECMP switch's own must stay
	// down before the switch takes it out of its ECMP groups on its own,
	// while the other switches wait for Reconvergence (default 5 ms, or
	// Reconvergence if that is shorter: a link-down debounce and a
	// next-hop-group update by the switch's software; docs/sim.md). At
	// most Reconvergence.
	LocalRepair time.Duration
	// StopAt bounds simulated time (default 1 s).
	StopAt time.Duration
	// Workers is the most goroutines a window runs on (default 2); a run
	// uses more than one only where that is faster (docs/sim.md).
	// Results do not depend on it.
	Workers int
	// HostGroups is the number of partitions hosts are split into for
	// parallelism (default 2; forced to 1 when flows are chained by
	// triggers that act across partitions at once, which a training
	// job's do not: docs/sim.md). Results do not depend on it, but for
	// the event count (docs/sim.md).
	HostGroups int
	// SwitchGroups is the number of partitions each plane's switches are
	// split into (default 2; 1 when switch-to-switch links have no
	// delay). Results do not depend on it, but for the event count and,
	// where it lengthens the window, the series' sample times.
	SwitchGroups int
	// SampleEvery is the interval of the goodput series (default about a
	// hundredth of the ideal completion time).
	SampleEvery time.Duration
	// SeriesFlows is how many flows (the first ones) get a per-flow
	// goodput series (default 16; negative: none).
	SeriesFlows int
	// Progress, when set, is called between windows with how far the run
	// has got.
	Progress func(Progress)

	// Taps name the capture points whose packets go to Capture (see
	// Tap for the syntax): host NIC ports, switch ports, or the packets
	// of a flow at its two hosts.
	Taps []string
	// Capture, when set, receives every packet that passes a tap, once
	// per capture point it passes. It is called serially, between
	// windows, in time order (packets of the same picosecond in partition
	// order), so its output is the same for any number of workers.
	Capture func(*Captured)
	// Trace, when set, receives the trace records (package trace) of
	// every host's transport that TraceFilter keeps (nil: all), tagged
	// with the host: serially, between windows, in time order.
	Trace       func(host int, r *trace.Record)
	TraceFilter *trace.Filter
}

// DefaultLocalRepair is Config.LocalRepair's default.
const DefaultLocalRepair = 5 * time.Millisecond

// Progress is how far a run has got, for progress displays.
type Progress struct {
	Now    time.Duration // simulated time reached
	Events uint64        // events processed
	// Flows and FlowsDone count the flows and those whose sender has
	// every byte acknowledged.
	Flows, FlowsDone int
	// Bytes is the workload's payload; Delivered the payload that has
	// reached receivers so far (retransmitted duplicates included, so
	// it may pass Bytes).
	Bytes, Delivered uint64
}

// QueueSpec sizes every switch port's queues, in bytes. Zero fields take
// defaults derived from the plane bandwidth-delay product BDP = host port
// speed × base RTT (UET's recommendations, digest §3.10).
type QueueSpec struct {
	Buffer        int // data queue capacity; tail drop beyond (default 4 BDP)
	HeaderBuffer  int // header/control queue capacity (default BDP)
	TrimAt        int // trim threshold on fabric ports (default 1 BDP)
	LastHopTrimAt int // trim threshold on ports facing hosts (default 1.5 BDP)
	ECNMin        int // RED marking starts (default 0.2 BDP)
	ECNMax        int // every packet marked (default 0.8 BDP)
	// ECNK is the single marking threshold of transports that ask for
	// one (Transport.ECNK, DCTCP): default BDP/7, the DCTCP paper's
	// bound K > C·RTT/7 (§3.3), but at least two full packets
	// (docs/tcp.md).
	ECNK int

	PFCXoff int // lossless: pause an ingress above this (default Buffer/4)
	PFCXon  int // resume below this (default PFCXoff/2)

	// TrimTo > 0 trims by cutting the datagram to TrimTo bytes, lengths
	// and checksums left stale, as NVIDIA Spectrum does (a 256-byte frame
	// is a 238-byte datagram; vswitch.QueueConfig.TrimTo). 0: after the
	// MRC headers, lengths fixed.
	TrimTo int
}

// FailureKind names what a Failure does.
type FailureKind string

const (
	LinkDown        FailureKind = "link_down"        // a link fails (both ways); Until restores it
	LinkFlap        FailureKind = "link_flap"        // a link fails FlapRate times a second (Poisson), each time for DownFor
	LossyLink       FailureKind = "lossy_link"       // a link drops Loss of its packets (both ways)
	SwitchDown      FailureKind = "switch_down"      // a switch and all its links fail
	SwitchReboot    FailureKind = "switch_reboot"    // a switch_down that ends at Until (required): the switch rebooted
	SwitchBlackhole FailureKind = "switch_blackhole" // a switch's dataplane drops everything; links and routes stay up
	NICPortDown     FailureKind = "nic_port_down"    // a host's NIC port (its link to the T0) fails; the NIC is told
)

// Failure is a scheduled failure of one or more fabric elements.
type Failure struct {
	Kind FailureKind
	// Element names the element (topo.Topology.Find: "t0-p1-3/t1-p1-5",
	// "t1-p0-2", "h7/p3"), or picks random ones: "random:t0-t1" (a T0–T1
	// link), "random:t1-t2", "random:host-link", "random:t0", "random:t1",
	// "random:t2".
	Element string
	// Count is how many random elements to pick (default 1).
	Count int
	// At is when the failure starts; Until when it ends (0: never).
	At, Until time.Duration
	// Loss is LossyLink's drop probability.
	Loss float64
	// FlapRate (flaps per second) and DownFor (default 10 µs) drive
	// LinkFlap between At and Until (Until required).
	FlapRate float64
	DownFor  time.Duration
}

func (c *Config) withDefaults() Config {
	d := *c
	if d.MTU == 0 {
		d.MTU = 4096
	}
	switch {
	case d.EthernetOverhead == 0:
		d.EthernetOverhead = 38
	case d.EthernetOverhead < 0:
		d.EthernetOverhead = 0
	}
	if d.Reconvergence == 0 {
		d.Reconvergence = time.Second
	}
	if d.LocalRepair == 0 {
		d.LocalRepair = min(DefaultLocalRepair, d.Reconvergence)
	}
	if d.StopAt == 0 {
		d.StopAt = time.Second
	}
	if d.Workers == 0 {
		d.Workers = 2
	}
	if d.HostGroups == 0 {
		d.HostGroups = 2
	}
	if d.SwitchGroups == 0 {
		d.SwitchGroups = 2
	}
	if d.SeriesFlows == 0 {
		d.SeriesFlows = 16
	}
	if d.Name == "" && d.Workload != nil {
		d.Name = d.Workload.Name
	}
	return d
}

func (c *Config) validate() error {
	switch {
	case c.Topology == nil:
		return fmt.Errorf("sim: config: topology is required")
	case c.Workload == nil:
		return fmt.Errorf("sim: config: workload is required")
	case c.Transport.New == nil:
		return fmt.Errorf("sim: config: transport %q has no NIC factory", c.Transport.Name)
	case c.MTU < 256 || c.MTU > 9000:
		return fmt.Errorf("sim: config: mtu %d, want 256..9000", c.MTU)
	case c.Workers < 1:
		return fmt.Errorf("sim: config: workers %d, want >= 1", c.Workers)
	case c.HostGroups < 1:
		return fmt.Errorf("sim: config: host_groups %d, want >= 1", c.HostGroups)
	case c.SwitchGroups < 1:
		return fmt.Errorf("sim: config: switch_groups %d, want >= 1", c.SwitchGroups)
	case c.StopAt < 0 || c.Reconvergence < 0 || c.LocalRepair < 0 || c.SampleEvery < 0:
		return fmt.Errorf("sim: config: negative stop time, reconvergence, local repair or sample interval")
	case c.LocalRepair > c.Reconvergence:
		return fmt.Errorf("sim: config: local_repair %v is longer than reconvergence %v: a switch learns of its own links first", c.LocalRepair, c.Reconvergence)
	}
	q := c.Queue
	if q.Buffer < 0 || q.HeaderBuffer < 0 || q.TrimAt < 0 || q.LastHopTrimAt < 0 || q.TrimTo < 0 || q.ECNMin < 0 || q.ECNMax < 0 || q.ECNK < 0 {
		return fmt.Errorf("sim: config: negative queue size")
	}
	if q.ECNMax > 0 && q.ECNMin > q.ECNMax {
		return fmt.Errorf("sim: config: queue ecn_min %d above ecn_max %d", q.ECNMin, q.ECNMax)
	}
	if err := c.Workload.Validate(c.Topology.Hosts); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}
