package scenario

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/openmrc/mrc/mptcp"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim"
	"github.com/openmrc/mrc/sim/htsim"
	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
	"github.com/openmrc/mrc/tcp"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/vswitch"
)

// DefaultTransports are run when a scenario names none: MRC, and RoCEv2
// as deployed (lossless, with PFC) over an ECMP fabric.
var DefaultTransports = []string{"mrc", "roce-pfc"}

// Plan is a scenario made ready to run: the fabric and the workload,
// built once, and the simulator configuration of each transport's run.
type Plan struct {
	Scenario *Scenario
	Seed     uint64
	Topology *topo.Topology
	Workload *workload.Workload
	// Job is the training job the workload compiles (kinds training,
	// simai, ring_allreduce); nil for flow workloads.
	Job *job.Plan
	// Runs holds one configuration per transport, in order.
	Runs []sim.Config
	// Fabric, Traffic and Failures describe the run in words, for the
	// report's header.
	Fabric, Traffic string
	Failures        []string
}

// Overrides are command-line changes to a scenario, applied by Build.
type Overrides struct {
	Seed       *uint64
	Transports []string // names: the scenario's own, or built-ins
	Duration   time.Duration
	Workers    int
}

// Build checks the scenario and builds its fabric, workload and runs.
// Every problem is an *Error naming the key (and line) at fault.
func (s *Scenario) Build(o Overrides) (*Plan, error) {
	p := &Plan{Scenario: s, Seed: 1}
	if s.Seed != nil {
		p.Seed = *s.Seed
	}
	if o.Seed != nil {
		p.Seed = *o.Seed
	}
	if len(s.Workload) == 0 {
		return nil, s.errorf("workload", "required: what the hosts send (kind: permutation, all_to_all, incast, ring_allreduce, flows, htsim, training or simai)")
	}
	// An htsim connection matrix sizes a fabric left unsized.
	parts := make([]*workload.Workload, len(s.Workload))
	nodes := 0
	for i, part := range s.Workload {
		if part.Kind == "htsim" {
			wl, n, err := s.readCM(i, part)
			if err != nil {
				return nil, err
			}
			parts[i], nodes = wl, max(nodes, n)
		}
	}
	tp, err := s.buildTopology(nodes)
	if err != nil {
		return nil, err
	}
	p.Topology = tp
	p.Fabric = describeFabric(s, tp)
	for i := range s.Workload {
		if parts[i] != nil {
			continue
		}
		if isJob(s.Workload[i].Kind) {
			if p.Job != nil {
				return nil, s.errorf(fmt.Sprintf("workload[%d].kind", i), "one training job per scenario (ring_allreduce, training and simai are jobs)")
			}
			if p.Job, err = s.buildJob(i, tp, p.Seed); err != nil {
				return nil, err
			}
			parts[i] = p.Job.Workload
			continue
		}
		if parts[i], err = s.buildPart(i, tp.Hosts, p.Seed); err != nil {
			return nil, err
		}
	}
	var offsets []partOffset
	if p.Workload, offsets, err = s.mergeParts(parts, tp.Hosts); err != nil {
		return nil, err
	}
	for i := range s.Workload {
		if isJob(s.Workload[i].Kind) {
			p.Job.TriggerOffset, p.Job.FlowOffset = offsets[i].trigger, offsets[i].flow
		}
	}
	p.Traffic = describeWorkload(s, p.Workload)

	stop := s.Duration.D()
	if o.Duration > 0 {
		stop = o.Duration
	}
	if stop == 0 {
		stop = defaultStop
	}
	failures, err := s.buildFailures(tp, p.Seed, stop, &p.Failures)
	if err != nil {
		return nil, err
	}
	transports, err := s.buildTransports(o.Transports)
	if err != nil {
		return nil, err
	}
	base, err := s.simConfig()
	if err != nil {
		return nil, err
	}
	base.Name, base.Topology, base.Workload, base.Seed, base.Failures = s.Name, tp, p.Workload, p.Seed, failures
	base.Job = p.Job
	if o.Duration > 0 {
		base.StopAt = o.Duration
	}
	if o.Workers > 0 {
		base.Workers = o.Workers
	}
	for _, t := range transports {
		c := base
		c.Transport = t
		p.Runs = append(p.Runs, c)
	}
	return p, nil
}

func (s *Scenario) buildTopology(nodes int) (*topo.Topology, error) {
	t := &s.Topology
	kind := t.Kind
	if kind == "" {
		kind = "clos2"
		if t.File != "" {
			kind = "htsim"
		}
	}
	planes := max(t.Planes, 1)
	if t.Planes < 0 {
		return nil, s.errorf("topology.planes", "%d: want 1 or more", t.Planes)
	}
	if planes > verbs.MaxPlanes {
		return nil, s.errorf("topology.planes", "%d: a NIC has at most %d ports", planes, verbs.MaxPlanes)
	}
	for _, c := range []struct {
		key string
		v   int
	}{{"hosts", t.Hosts}, {"t0_down", t.T0Down}, {"t0_up", t.T0Up}, {"radix", t.Radix}, {"pod_size", t.PodSize}, {"t1_up", t.T1Up}} {
		if c.v < 0 {
			return nil, s.errorf("topology."+c.key, "%d: want a positive number", c.v)
		}
	}
	notWith := func(key string, set bool) error {
		if set {
			return s.errorf("topology."+key, "not used with kind %s", kind)
		}
		return nil
	}
	var tp *topo.Topology
	var err error
	switch kind {
	case "clos2", "clos3":
		if err := notWith("file", t.File != ""); err != nil {
			return nil, err
		}
		hosts := t.Hosts
		if hosts == 0 {
			hosts = nodes
		}
		if hosts == 0 {
			return nil, s.errorf("topology.hosts", "required: the number of hosts (GPUs, one NIC each)")
		}
		if kind == "clos2" {
			for _, k := range []struct {
				key string
				set bool
			}{{"pod_size", t.PodSize != 0}, {"t1_up", t.T1Up != 0}} {
				if err := notWith(k.key, k.set); err != nil {
					return nil, err
				}
			}
			if t.T0Down == 0 && t.T0Up == 0 && t.Radix == 0 {
				return nil, s.errorf("topology", "say how big the switches are: t0_down and t0_up (host ports and uplinks per T0), or radix")
			}
			tp, err = topo.Clos2(topo.Clos2Config{Hosts: hosts, Planes: planes, T0Down: t.T0Down, T0Up: t.T0Up, Radix: t.Radix,
				HostRate: int64(t.HostRate), FabricRate: int64(t.FabricRate),
				HostDelay: t.HostDelay.D(), FabricDelay: t.FabricDelay.D(), SwitchLatency: t.SwitchLatency.D()})
		} else {
			if planes != 1 {
				return nil, s.errorf("topology.planes", "a clos3 fabric has one plane")
			}
			tp, err = topo.Clos3(topo.Clos3Config{Hosts: hosts, T0Down: t.T0Down, T0Up: t.T0Up, PodSize: t.PodSize, T1Up: t.T1Up,
				Radix: t.Radix, HostRate: int64(t.HostRate), FabricRate: int64(t.FabricRate),
				HostDelay: t.HostDelay.D(), FabricDelay: t.FabricDelay.D(), SwitchLatency: t.SwitchLatency.D()})
		}
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "topo: ")
			msg = strings.TrimPrefix(strings.TrimPrefix(msg, "topology: "), kind+": ")
			return nil, s.errorf("topology", "%s", msg)
		}
	case "htsim":
		if t.File == "" {
			return nil, s.errorf("topology.file", "required with kind htsim: an htsim .topo file")
		}
		for _, k := range []struct {
			key string
			set bool
		}{{"hosts", t.Hosts != 0}, {"t0_down", t.T0Down != 0}, {"t0_up", t.T0Up != 0}, {"radix", t.Radix != 0},
			{"pod_size", t.PodSize != 0}, {"t1_up", t.T1Up != 0}, {"host_rate", t.HostRate != 0}, {"fabric_rate", t.FabricRate != 0},
			{"host_delay", t.HostDelay != 0}, {"fabric_delay", t.FabricDelay != 0}, {"switch_latency", t.SwitchLatency != 0}} {
			if k.set {
				return nil, s.errorf("topology."+k.key, "not used with kind htsim: the .topo file sets it")
			}
		}
		f, name, err := s.open(t.File)
		if err != nil {
			return nil, s.errorf("topology.file", "%s", openError(err))
		}
		defer f.Close()
		tf, err := htsim.ReadTopo(name, f)
		if err != nil {
			return nil, htsimError(err)
		}
		if tp, err = tf.Build(planes); err != nil {
			return nil, htsimError(err)
		}
	default:
		return nil, s.errorf("topology.kind", "unknown kind %q (want clos2, clos3 or htsim)", t.Kind)
	}
	return tp, nil
}

// htsimError turns an htsim parse error into an Error.
func htsimError(err error) error {
	var he *htsim.Error
	if errors.As(err, &he) {
		return &Error{File: he.File, Line: he.Line, Msg: he.Msg}
	}
	return err
}

func openError(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "open ") {
		msg = msg[5:i] + ": " + msg[i+2:]
	}
	return msg
}

func (s *Scenario) readCM(i int, part WorkloadPart) (*workload.Workload, int, error) {
	key := fmt.Sprintf("workload[%d]", i)
	if part.File == "" {
		return nil, 0, s.errorf(key+".file", "required with kind htsim: an htsim .cm connection matrix")
	}
	f, name, err := s.open(part.File)
	if err != nil {
		return nil, 0, s.errorf(key+".file", "%s", openError(err))
	}
	defer f.Close()
	wl, n, err := htsim.ReadCM(name, f.(io.Reader))
	if err != nil {
		return nil, 0, htsimError(err)
	}
	return wl, n, nil
}

// buildPart generates workload part i for a fabric of hosts hosts.
func (s *Scenario) buildPart(i, hosts int, seed uint64) (*workload.Workload, error) {
	part := s.Workload[i]
	key := fmt.Sprintf("workload[%d]", i)
	if len(s.Workload) == 1 {
		key = "workload"
	}
	n := part.Hosts
	if n == 0 {
		n = hosts - part.Offset
	}
	switch {
	case part.Hosts < 0:
		return nil, s.errorf(key+".hosts", "%d: want a positive number", part.Hosts)
	case part.Offset < 0:
		return nil, s.errorf(key+".offset", "%d: want 0 or more", part.Offset)
	case part.Offset+n > hosts:
		return nil, s.errorf(key+".hosts", "hosts %d..%d, but the fabric has %d", part.Offset, part.Offset+n-1, hosts)
	}
	needSize := func() error {
		if part.Size == 0 {
			return s.errorf(key+".size", "required: the bytes of each flow, like 1MiB")
		}
		return nil
	}
	unused := func(k string, set bool) error {
		if set {
			return s.errorf(key+"."+k, "not used with kind %s", part.Kind)
		}
		return nil
	}
	for _, u := range []struct {
		k     string
		set   bool
		kinds []string
	}{
		{"senders", part.Senders != 0, []string{"incast"}},
		{"victim", part.Victim != nil, []string{"incast"}},
		{"parallel", part.Parallel != nil, []string{"all_to_all"}},
		{"chunks", part.Chunks != 0, nil},
		{"steps", part.Steps != 0, nil},
		{"placement", part.Placement != "", nil},
		{"gpus_per_server", part.GPUsPerServer != 0, nil},
		{"scale_up_rate", part.ScaleUpRate != 0, nil},
		{"scale_up_latency", part.ScaleUpLatency != 0, nil},
		{"channels", part.Channels != 0, nil},
		{"qps_per_connection", part.QPsPerConnection != 0, nil},
		{"algorithm", part.Algorithm != "", nil},
		{"ops", part.Ops != nil, nil},
		{"file", part.File != "", []string{"htsim"}},
		{"flows", part.Flows != nil, []string{"flows"}},
		{"size", part.Size != 0, []string{"permutation", "all_to_all", "incast"}},
	} {
		if !slices.Contains(u.kinds, part.Kind) {
			if err := unused(u.k, u.set); err != nil {
				return nil, err
			}
		}
	}
	var wl *workload.Workload
	var err error
	switch part.Kind {
	case "permutation":
		if err := needSize(); err != nil {
			return nil, err
		}
		wl, err = workload.Permutation(n, uint64(part.Size), seed+uint64(i))
	case "all_to_all":
		if err := needSize(); err != nil {
			return nil, err
		}
		par := part.Parallel == nil || *part.Parallel
		wl, err = workload.AllToAll(n, uint64(part.Size), par)
	case "incast":
		if err := needSize(); err != nil {
			return nil, err
		}
		senders := part.Senders
		if senders == 0 {
			senders = n - 1
		}
		if senders < 1 || senders >= n {
			return nil, s.errorf(key+".senders", "%d: want 1..%d (hosts 1..senders send to host 0 of the part)", senders, n-1)
		}
		vs, vd := -1, -1
		if v := part.Victim; v != nil {
			vs, vd = v.Src, v.Dst
			if vs < 0 || vd < 0 || vs >= n || vd >= n || vs == vd {
				return nil, s.errorf(key+".victim", "src %d, dst %d: want two different hosts of 0..%d", vs, vd, n-1)
			}
		}
		wl, err = workload.Incast(senders, uint64(part.Size), vs, vd)
	case "flows":
		wl, err = s.flowsPart(key, part, n)
	case "htsim":
		return nil, s.errorf(key+".kind", "internal: htsim part not read")
	case "":
		return nil, s.errorf(key+".kind", "required: permutation, all_to_all, incast, ring_allreduce, flows, htsim, training or simai")
	default:
		return nil, s.errorf(key+".kind", "unknown kind %q (want permutation, all_to_all, incast, ring_allreduce, flows, htsim, training or simai)", part.Kind)
	}
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, s.errorf(key, "%s", strings.TrimPrefix(err.Error(), "workload: "))
	}
	if part.Offset > 0 {
		for j := range wl.Flows {
			wl.Flows[j].Src += part.Offset
			wl.Flows[j].Dst += part.Offset
		}
	}
	return wl, nil
}

func (s *Scenario) flowsPart(key string, part WorkloadPart, n int) (*workload.Workload, error) {
	if len(part.Flows) == 0 {
		return nil, s.errorf(key+".flows", "required with kind flows: a list of {src, dst, size}")
	}
	wl := &workload.Workload{Name: "flows"}
	ids := map[int]int{}
	for j, f := range part.Flows {
		fk := fmt.Sprintf("%s.flows[%d]", key, j)
		id := f.ID
		if id == 0 {
			id = j + 1
		}
		if _, dup := ids[id]; dup || id < 0 {
			return nil, s.errorf(fk+".id", "%d: flow IDs must be positive and distinct", id)
		}
		ids[id] = j
		switch {
		case f.Src < 0 || f.Src >= n || f.Dst < 0 || f.Dst >= n:
			return nil, s.errorf(fk, "src %d, dst %d: want hosts 0..%d", f.Src, f.Dst, n-1)
		case f.Src == f.Dst:
			return nil, s.errorf(fk, "src and dst are both host %d", f.Src)
		case f.Size == 0:
			return nil, s.errorf(fk+".size", "required: the flow's bytes")
		case f.After != 0 && f.Start != 0:
			return nil, s.errorf(fk, "give start or after, not both")
		}
		wl.Flows = append(wl.Flows, workload.Flow{ID: id, Src: f.Src, Dst: f.Dst, Size: uint64(f.Size), Start: mtime.PicosOf(f.Start.D()), Tag: f.Tag})
	}
	// "after: X": flow X fires a oneshot trigger when its bytes are all
	// acknowledged; the flows after it wait for that trigger.
	trig := map[int]int{}
	for j, f := range part.Flows {
		if f.After == 0 {
			continue
		}
		k, ok := ids[f.After]
		if !ok {
			return nil, s.errorf(fmt.Sprintf("%s.flows[%d].after", key, j), "no flow has ID %d", f.After)
		}
		if k == j {
			return nil, s.errorf(fmt.Sprintf("%s.flows[%d].after", key, j), "a flow cannot wait for itself")
		}
		tid, ok := trig[k]
		if !ok {
			tid = len(trig) + 1
			trig[k] = tid
			wl.Triggers = append(wl.Triggers, workload.Trigger{ID: tid, Kind: workload.Oneshot})
			wl.Flows[k].SendDoneTrigger = tid
		}
		wl.Flows[j].Trigger = tid
	}
	return wl, nil
}

// partOffset is where a part's triggers and flows begin in the merged
// workload's lists.
type partOffset struct{ trigger, flow int }

// mergeParts applies each part's start and tag and joins the parts,
// returning also where each part's triggers and flows begin:
// with several, flows are renumbered 1..N in order and triggers kept
// apart.
func (s *Scenario) mergeParts(parts []*workload.Workload, hosts int) (*workload.Workload, []partOffset, error) {
	out := &workload.Workload{}
	first := make([]partOffset, len(parts))
	var names []string
	for i, wl := range parts {
		part := s.Workload[i]
		name := wl.Name
		if part.Tag != "" {
			name = part.Tag
		}
		names = append(names, name)
		base := 0
		for _, t := range out.Triggers {
			base = max(base, t.ID)
		}
		first[i] = partOffset{len(out.Triggers), len(out.Flows)}
		for _, t := range wl.Triggers {
			t.ID += base
			if len(t.Activates) > 0 {
				t.Activates = slices.Clone(t.Activates)
				for k := range t.Activates {
					t.Activates[k] += base
				}
			}
			out.Triggers = append(out.Triggers, t)
		}
		shift := func(id int) int {
			if id == 0 {
				return 0
			}
			return id + base
		}
		for _, f := range wl.Flows {
			if f.Trigger == 0 {
				f.Start += mtime.PicosOf(part.Start.D())
			}
			f.Trigger, f.SendDoneTrigger, f.RecvDoneTrigger = shift(f.Trigger), shift(f.SendDoneTrigger), shift(f.RecvDoneTrigger)
			if f.Tag == "" {
				f.Tag = part.Tag
			}
			if len(parts) > 1 {
				if f.Tag == "" {
					f.Tag = part.Kind
				}
				f.ID = len(out.Flows) + 1
			}
			out.Flows = append(out.Flows, f)
		}
	}
	out.Name = strings.Join(names, " + ")
	if err := out.Validate(hosts); err != nil {
		return nil, nil, s.errorf("workload", "%s", strings.TrimPrefix(err.Error(), "workload: "))
	}
	if len(out.Flows) == 0 && len(out.Triggers) == 0 {
		return nil, nil, s.errorf("workload", "no flows")
	}
	return out, first, nil
}

var failureKinds = []sim.FailureKind{sim.LinkDown, sim.LinkFlap, sim.LossyLink, sim.SwitchDown, sim.SwitchReboot, sim.SwitchBlackhole, sim.NICPortDown}

var randomSelectors = []string{"random:t0-t1", "random:t1-t2", "random:host-link", "random:t0", "random:t1", "random:t2"}

// buildFailures checks the scenario's failures and returns the
// simulator's, appending their descriptions to descs. An mtbf process
// (seeded from seed) is drawn over its window, by default the run's
// first stop.
func (s *Scenario) buildFailures(tp *topo.Topology, seed uint64, stop time.Duration, descs *[]string) ([]sim.Failure, error) {
	var out []sim.Failure
	for i, f := range s.Failures {
		key := fmt.Sprintf("failures[%d]", i)
		kind := sim.FailureKind(f.Kind)
		if f.Kind == kindMTBF {
			drawn, d, err := s.expandMTBF(i, f, tp, seed, stop)
			if err != nil {
				return nil, err
			}
			out, *descs = append(out, drawn...), append(*descs, d...)
			continue
		}
		if f.Compress != nil || f.Classes != nil {
			return nil, s.errorf(key, "compress and classes are only for kind mtbf")
		}
		*descs = append(*descs, describeFailure(f))
		if !slices.Contains(failureKinds, kind) {
			names := []string{kindMTBF}
			for _, k := range failureKinds {
				names = append(names, string(k))
			}
			if f.Kind == "" {
				return nil, s.errorf(key+".kind", "required: one of %s", strings.Join(names, ", "))
			}
			return nil, s.errorf(key+".kind", "unknown kind %q (want %s)", f.Kind, strings.Join(names, ", "))
		}
		switch {
		case f.Element == "":
			return nil, s.errorf(key+".element", "required: a link (t0-p0-1/t1-p0-2), switch (t1-p0-2), host port (h3/p1) or %s", strings.Join(randomSelectors, ", "))
		case strings.HasPrefix(f.Element, "random:"):
			if !slices.Contains(randomSelectors, f.Element) {
				return nil, s.errorf(key+".element", "unknown selector %q (want %s)", f.Element, strings.Join(randomSelectors, ", "))
			}
		default:
			if _, err := tp.Find(f.Element); err != nil {
				return nil, s.errorf(key+".element", "%s", strings.TrimPrefix(err.Error(), "topo: "))
			}
			if f.Count > 1 {
				return nil, s.errorf(key+".count", "%d: a count needs a random: element", f.Count)
			}
		}
		switch {
		case f.Count < 0:
			return nil, s.errorf(key+".count", "%d: want 1 or more", f.Count)
		case f.Until != 0 && f.Until <= f.At:
			return nil, s.errorf(key+".until", "%v is not after at (%v)", f.Until.D(), f.At.D())
		case kind == sim.LinkFlap && (f.Until == 0 || f.FlapRate <= 0):
			return nil, s.errorf(key, "a link_flap needs until and a positive flap_rate (flaps per second)")
		case kind == sim.SwitchReboot && f.Until == 0:
			return nil, s.errorf(key+".until", "required: a switch_reboot comes back at until (a switch that stays down is switch_down)")
		case kind == sim.LossyLink && (f.Loss <= 0 || f.Loss > 1):
			return nil, s.errorf(key+".loss", "%v: a lossy_link needs loss, a probability in (0, 1]", f.Loss)
		case kind != sim.LossyLink && f.Loss != 0:
			return nil, s.errorf(key+".loss", "only for kind lossy_link")
		case kind != sim.LinkFlap && (f.FlapRate != 0 || f.DownFor != 0):
			return nil, s.errorf(key, "flap_rate and down_for are only for kind link_flap")
		case f.FlapRate < 0:
			return nil, s.errorf(key+".flap_rate", "%v: want a positive rate", f.FlapRate)
		}
		out = append(out, sim.Failure{Kind: kind, Element: f.Element, Count: f.Count, At: f.At.D(), Until: f.Until.D(),
			Loss: f.Loss, FlapRate: f.FlapRate, DownFor: f.DownFor.D()})
	}
	return out, nil
}

// builtinNames lists the built-in transports.
func builtinNames() []string { return namesWhere(func(sim.Transport) bool { return true }) }

// namesWhere lists the built-in transports that keep says to.
func namesWhere(keep func(sim.Transport) bool) []string {
	var names []string
	for _, t := range sim.Transports() {
		if keep(t) {
			names = append(names, t.Name)
		}
	}
	return names
}

// tcpTransport applies a variant's tcp: block to t, a transport that
// runs package tcp.
func (s *Scenario) tcpTransport(key, base string, t sim.Transport, p *TCPParams) (sim.Transport, error) {
	if t.TCP == nil {
		hint := ""
		if t.MPTCP != nil {
			hint = "; give mptcp's TCP parameters in its mptcp: block"
		}
		return t, s.errorf(key, "%s does not run TCP (tcp applies to %s%s)", base, strings.Join(namesWhere(func(t sim.Transport) bool { return t.TCP != nil }), ", "), hint)
	}
	cfg := *t.TCP
	if err := s.applyTCP(key, p, &cfg); err != nil {
		return t, err
	}
	if err := tcp.Check(cfg); err != nil {
		return t, s.errorf(key, "%v", err)
	}
	nt := sim.TCP(t.Name, cfg.Variant, cfg)
	nt.Trim, nt.Lossless, nt.ECNLastHop, nt.ECNK = t.Trim, t.Lossless, t.ECNLastHop, t.ECNK
	return nt, nil
}

// mptcpTransport applies a variant's mptcp: block to t, a transport that
// runs package mptcp.
func (s *Scenario) mptcpTransport(key, base string, t sim.Transport, p *MPTCPParams) (sim.Transport, error) {
	if t.MPTCP == nil {
		return t, s.errorf(key, "%s does not run MPTCP (mptcp applies to %s)", base, strings.Join(namesWhere(func(t sim.Transport) bool { return t.MPTCP != nil }), ", "))
	}
	cfg := *t.MPTCP
	if p.Subflows < 0 {
		return t, s.errorf(key+".subflows", "%d: want a positive number", p.Subflows)
	}
	if p.Subflows != 0 {
		cfg.Subflows = p.Subflows
	}
	if p.CC != "" {
		cc, ok := mptcp.ParseCC(p.CC)
		if !ok {
			return t, s.errorf(key+".cc", "unknown congestion control %q (want %s)", p.CC, strings.Join(mptcp.CCNames, ", "))
		}
		cfg.CC = cc
	}
	if err := s.applyTCP(key, &p.TCPParams, &cfg.TCP); err != nil {
		return t, err
	}
	if err := mptcp.Check(cfg); err != nil {
		return t, s.errorf(key, "%v", err)
	}
	nt := sim.MPTCP(t.Name, cfg)
	nt.Trim, nt.Lossless, nt.ECNLastHop, nt.ECNK = t.Trim, t.Lossless, t.ECNLastHop, t.ECNK
	return nt, nil
}

// applyTCP sets the TCP parameters of p (keys under key) in cfg.
func (s *Scenario) applyTCP(key string, p *TCPParams, cfg *tcp.Config) error {
	for _, c := range []struct {
		k string
		v int
	}{{"init_cwnd", p.InitCwnd}, {"dupthresh", p.DupThresh}, {"mss", p.MSS}} {
		if c.v < 0 {
			return s.errorf(key+"."+c.k, "%d: want a positive number", c.v)
		}
	}
	for _, c := range []struct {
		k string
		v Duration
	}{{"min_rto", p.MinRTO}, {"max_rto", p.MaxRTO}, {"initial_rto", p.InitialRTO}, {"delack", p.DelAck}} {
		if c.v < 0 {
			return s.errorf(key+"."+c.k, "%v: want a positive duration", c.v.D())
		}
	}
	if p.MinRTO != 0 {
		cfg.MinRTO = p.MinRTO.D()
	}
	if p.MaxRTO != 0 {
		cfg.MaxRTO = p.MaxRTO.D()
	}
	if p.InitialRTO != 0 {
		cfg.InitialRTO = p.InitialRTO.D()
	}
	if p.InitCwnd != 0 {
		cfg.InitCwnd = p.InitCwnd
	}
	if p.DupThresh != 0 {
		cfg.DupThresh = p.DupThresh
	}
	if p.MSS != 0 {
		cfg.MSS = p.MSS
	}
	if p.RACK != nil {
		cfg.DisableRACK = !*p.RACK
	}
	if p.DelayedACK != nil {
		cfg.DisableDelayedACK = !*p.DelayedACK
	}
	if p.DelAck != 0 {
		cfg.DelAck = p.DelAck.D()
	}
	return nil
}

// buildTransports resolves the scenario's transports, or the names
// given on the command line.
func (s *Scenario) buildTransports(names []string) ([]sim.Transport, error) {
	specs := s.Transports
	defined := map[string]int{}
	for i, t := range specs {
		name := t.Name
		if name == "" {
			name = t.Base
		}
		if _, dup := defined[name]; dup {
			return nil, s.errorf(fmt.Sprintf("transports[%d]", i), "two transports are called %q (give each a name)", name)
		}
		defined[name] = i
	}
	var out []sim.Transport
	if names != nil {
		for _, n := range names {
			if _, own := defined[n]; n == "all" && !own {
				// Every built-in transport, in sim.Transports' order.
				for _, t := range sim.Transports() {
					if t.New != nil {
						out = append(out, t)
					}
				}
				continue
			}
			if i, ok := defined[n]; ok {
				t, err := s.transport(i, specs[i])
				if err != nil {
					return nil, err
				}
				out = append(out, t)
				continue
			}
			t, err := sim.LookupTransport(n)
			if err != nil {
				return nil, &Error{Msg: fmt.Sprintf("--transports: unknown transport %q (built-in: %s)", n, strings.Join(builtinNames(), ", "))}
			}
			out = append(out, t)
		}
		return out, nil
	}
	if len(specs) == 0 {
		for _, n := range DefaultTransports {
			t, err := sim.LookupTransport(n)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		return out, nil
	}
	for i, spec := range specs {
		t, err := s.transport(i, spec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *Scenario) transport(i int, spec Transport) (sim.Transport, error) {
	key := fmt.Sprintf("transports[%d]", i)
	base := spec.Base
	if base == "" {
		base = spec.Name
	}
	if base == "" {
		return sim.Transport{}, s.errorf(key, "give a name (a built-in: %s) or a base", strings.Join(builtinNames(), ", "))
	}
	t, err := sim.LookupTransport(base)
	if err != nil {
		k := key + ".base"
		if spec.Base == "" {
			k = key
		}
		return sim.Transport{}, s.errorf(k, "unknown transport %q (built-in: %s)", base, strings.Join(builtinNames(), ", "))
	}
	if spec.Name != "" {
		t.Name = spec.Name
	}
	if spec.EV != nil {
		if t.EV == nil {
			return sim.Transport{}, s.errorf(key+".ev", "%s does not run the MRC core: it has no EVs (ev applies to %s)", base, strings.Join(namesWhere(func(t sim.Transport) bool { return t.EV != nil }), ", "))
		}
		ev := *t.EV
		e := spec.EV
		set := func(dst *int, v int) {
			if v != 0 {
				*dst = v
			}
		}
		set(&ev.ActivePerPlane, e.ActivePerPlane)
		set(&ev.BackupPerPlane, e.BackupPerPlane)
		set(&ev.PathsPerPlane, e.PathsPerPlane)
		set(&ev.MinActive, e.MinActive)
		set(&ev.ProbeSuccesses, e.ProbeSuccesses)
		if e.Skip != 0 {
			ev.Skip = e.Skip.D()
		}
		if e.ProbeInterval != 0 {
			ev.ProbeInterval = e.ProbeInterval.D()
		}
		if e.ProbeIntervalMax != 0 {
			ev.ProbeIntervalMax = e.ProbeIntervalMax.D()
		}
		if e.Oblivious != nil {
			ev.Oblivious = *e.Oblivious
		}
		if e.REPS != nil {
			ev.REPS = *e.REPS
		}
		if e.Mixed != nil {
			ev.Mixed = *e.Mixed
			if ev.Mixed && e.REPS == nil {
				ev.REPS = false // the mixed mode replaces the base's REPS (uec's)
			}
		}
		for _, c := range []struct {
			k string
			v int
		}{{"active_per_plane", e.ActivePerPlane}, {"paths_per_plane", e.PathsPerPlane}, {"min_active", e.MinActive}, {"probe_successes", e.ProbeSuccesses}} {
			if c.v < 0 {
				return sim.Transport{}, s.errorf(key+".ev."+c.k, "%d: want a positive number", c.v)
			}
		}
		if ev.REPS && ev.Mixed {
			return sim.Transport{}, s.errorf(key+".ev.mixed", "true with reps: an EV profile sprays by REPS or by the mixed mode, not both")
		}
		nt := sim.MRCProfile(t.Name, ev, t.Fabric)
		nt.Trim, nt.Lossless, nt.ECNLastHop = t.Trim, t.Lossless, t.ECNLastHop
		t = nt
	}
	if spec.TCP != nil {
		var err error
		if t, err = s.tcpTransport(key+".tcp", base, t, spec.TCP); err != nil {
			return sim.Transport{}, err
		}
	}
	if spec.IB != nil {
		var err error
		if t, err = s.ibTransport(key+".ib", base, t, spec.IB); err != nil {
			return sim.Transport{}, err
		}
	}
	if spec.MPTCP != nil {
		var err error
		if t, err = s.mptcpTransport(key+".mptcp", base, t, spec.MPTCP); err != nil {
			return sim.Transport{}, err
		}
	}
	switch spec.Fabric {
	case "":
	case "srv6":
		if t.EV == nil {
			return sim.Transport{}, s.errorf(key+".fabric", "srv6 needs a transport that runs the MRC core (it encapsulates uSID paths); %s routes plain IPv6", base)
		}
		t.Fabric = vswitch.ModeSRv6
	case "ecmp":
		t.Fabric = vswitch.ModeECMP
	default:
		return sim.Transport{}, s.errorf(key+".fabric", "unknown fabric %q (want srv6 or ecmp)", spec.Fabric)
	}
	if spec.Trim != nil {
		t.Trim = *spec.Trim
	}
	if spec.Lossless != nil {
		t.Lossless = *spec.Lossless
	}
	if t.Credits && (t.Trim || t.Lossless) {
		k := key + ".trim"
		if t.Lossless {
			k = key + ".lossless"
		}
		return sim.Transport{}, s.errorf(k, "%s's links are lossless by their credits: trimming and PFC do not apply", base)
	}
	if spec.ECNLastHop != nil {
		t.ECNLastHop = *spec.ECNLastHop
	}
	return t, nil
}

func (s *Scenario) simConfig() (sim.Config, error) {
	o := &s.Sim
	c := sim.Config{MTU: o.MTU, Reconvergence: o.Reconvergence.D(), LocalRepair: o.LocalRepair.D(), SampleEvery: o.SampleEvery.D(),
		SeriesFlows: o.SeriesFlows, Workers: o.Workers, HostGroups: o.HostGroups, SwitchGroups: o.SwitchGroups, StopAt: s.Duration.D()}
	if o.EthernetOverhead != nil {
		c.EthernetOverhead = *o.EthernetOverhead
		if c.EthernetOverhead == 0 {
			c.EthernetOverhead = -1 // sim: negative means none
		}
		if *o.EthernetOverhead < 0 {
			return c, s.errorf("sim.ethernet_overhead", "%d: want 0 or more bytes", *o.EthernetOverhead)
		}
	}
	switch {
	case o.MTU != 0 && (o.MTU < 256 || o.MTU > 9000):
		return c, s.errorf("sim.mtu", "%d: want 256..9000", o.MTU)
	case o.Workers < 0:
		return c, s.errorf("sim.workers", "%d: want 1 or more", o.Workers)
	case o.HostGroups < 0:
		return c, s.errorf("sim.host_groups", "%d: want 1 or more", o.HostGroups)
	case o.SwitchGroups < 0:
		return c, s.errorf("sim.switch_groups", "%d: want 1 or more", o.SwitchGroups)
	case o.Reconvergence != 0 && o.LocalRepair > o.Reconvergence || o.Reconvergence == 0 && o.LocalRepair.D() > time.Second:
		return c, s.errorf("sim.local_repair", "%v is longer than reconvergence: a switch learns of its own links first", o.LocalRepair.D())
	}
	q := &s.Queues
	big := func(key string, v Size) (int, error) {
		if v > 1<<40 {
			return 0, s.errorf("queues."+key, "%d bytes is more than any switch has", v)
		}
		return int(v), nil
	}
	var err error
	for _, f := range []struct {
		key string
		v   Size
		dst *int
	}{{"buffer", q.Buffer, &c.Queue.Buffer}, {"header_buffer", q.HeaderBuffer, &c.Queue.HeaderBuffer}, {"trim_at", q.TrimAt, &c.Queue.TrimAt},
		{"last_hop_trim_at", q.LastHopTrimAt, &c.Queue.LastHopTrimAt}, {"trim_to", q.TrimTo, &c.Queue.TrimTo}, {"ecn_min", q.ECNMin, &c.Queue.ECNMin}, {"ecn_max", q.ECNMax, &c.Queue.ECNMax}, {"ecn_k", q.ECNK, &c.Queue.ECNK},
		{"pfc_xoff", q.PFCXoff, &c.Queue.PFCXoff}, {"pfc_xon", q.PFCXon, &c.Queue.PFCXon}} {
		if *f.dst, err = big(f.key, f.v); err != nil {
			return c, err
		}
	}
	if q.ECNMax != 0 && q.ECNMin > q.ECNMax {
		return c, s.errorf("queues.ecn_min", "%d is above ecn_max %d", q.ECNMin, q.ECNMax)
	}
	return c, nil
}
