// Package htsim reads htsim's plain-text inputs: connection matrices
// (.cm) into a workload.Workload and topology files (.topo) into a
// two- or three-tier Clos (package sim/topo). The formats are described
// in the project's design notes; errors name the file and line.
package htsim

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openmrc/mrc/internal/host/lines"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/topo"
	"github.com/openmrc/mrc/sim/workload"
)

// Error is a parse error at a line of a file.
type Error struct {
	File string
	Line int // 1-based; 0 when the error is about the file as a whole
	Msg  string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// lineReader is a lines.Reader whose errors name the file and line.
type lineReader struct {
	*lines.Reader
	name string
}

func (r *lineReader) errf(format string, a ...any) error {
	return &Error{File: r.name, Line: r.Line(), Msg: fmt.Sprintf(format, a...)}
}

func newReader(name string, in io.Reader) *lineReader {
	return &lineReader{Reader: lines.NewReader(in, 1<<20), name: name}
}

// ReadCMFile reads a connection matrix from a file.
func ReadCMFile(path string) (*workload.Workload, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return ReadCM(path, f)
}

// ReadCM reads a connection matrix named name: a header of "Nodes N",
// "Connections C" and optionally "Triggers T" (and "Failures 0"), then
// one line per flow,
//
//	src->dst [id n] [start t_ps] size B [prio p] [trigger id] [send_done_trigger id] [recv_done_trigger id]
//
// and one per trigger, "trigger id T oneshot|multishot|barrier [count k]".
// It returns the workload and the node count.
func ReadCM(name string, in io.Reader) (*workload.Workload, int, error) {
	r := newReader(name, in)
	w := &workload.Workload{Name: baseName(name)}
	nodes, conns, trigs := -1, -1, 0
	seenIDs := map[int]int{}
	for {
		f, ok := r.Next()
		if !ok {
			break
		}
		switch {
		case f[0] == "Nodes" || f[0] == "Connections" || f[0] == "Triggers" || f[0] == "Failures":
			if len(f) != 2 {
				return nil, 0, r.errf("%s: want one number", f[0])
			}
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 0 {
				return nil, 0, r.errf("%s %q: not a count", f[0], f[1])
			}
			switch f[0] {
			case "Nodes":
				nodes = n
			case "Connections":
				conns = n
			case "Triggers":
				trigs = n
			case "Failures":
				if n > 0 {
					return nil, 0, r.errf("htsim failure lines are not supported: describe failures in the scenario instead")
				}
			}
		case f[0] == "trigger":
			t, err := parseTrigger(f)
			if err != nil {
				return nil, 0, r.errf("%v", err)
			}
			w.Triggers = append(w.Triggers, t)
		case strings.Contains(f[0], "->"):
			if nodes < 0 {
				return nil, 0, r.errf("flow before the Nodes line")
			}
			fl, err := parseFlow(f, nodes)
			if err != nil {
				return nil, 0, r.errf("%v", err)
			}
			if fl.ID == 0 {
				fl.ID = len(w.Flows) + 1
			}
			if prev, dup := seenIDs[fl.ID]; dup {
				return nil, 0, r.errf("flow id %d already used on line %d", fl.ID, prev)
			}
			seenIDs[fl.ID] = r.Line()
			w.Flows = append(w.Flows, fl)
		default:
			return nil, 0, r.errf("unexpected %q: want a header (Nodes, Connections, Triggers), a flow src->dst or a trigger line", f[0])
		}
	}
	if err := r.Err(); err != nil {
		return nil, 0, &Error{File: name, Msg: err.Error()}
	}
	switch {
	case nodes < 0:
		return nil, 0, &Error{File: name, Msg: "no Nodes line"}
	case conns >= 0 && conns != len(w.Flows):
		return nil, 0, &Error{File: name, Line: r.Line(), Msg: fmt.Sprintf("Connections says %d, the file has %d flows", conns, len(w.Flows))}
	case trigs != len(w.Triggers):
		return nil, 0, &Error{File: name, Line: r.Line(), Msg: fmt.Sprintf("Triggers says %d, the file has %d trigger lines", trigs, len(w.Triggers))}
	}
	if err := w.Validate(nodes); err != nil {
		return nil, 0, &Error{File: name, Msg: err.Error()}
	}
	return w, nodes, nil
}

func parseFlow(f []string, nodes int) (workload.Flow, error) {
	var fl workload.Flow
	a, b, _ := strings.Cut(f[0], "->")
	src, err1 := strconv.Atoi(a)
	dst, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return fl, fmt.Errorf("flow %q: want src->dst with node numbers", f[0])
	}
	if src < 0 || src >= nodes || dst < 0 || dst >= nodes {
		return fl, fmt.Errorf("flow %q: nodes are 0..%d", f[0], nodes-1)
	}
	if src == dst {
		return fl, fmt.Errorf("flow %q: a node cannot send to itself", f[0])
	}
	fl.Src, fl.Dst = src, dst
	hasSize := false
	for i := 1; i < len(f); i += 2 {
		if i+1 >= len(f) {
			return fl, fmt.Errorf("%q has no value", f[i])
		}
		v, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || v < 0 {
			return fl, fmt.Errorf("%s %q: want a non-negative integer", f[i], f[i+1])
		}
		switch f[i] {
		case "id":
			fl.ID = int(v)
		case "start":
			fl.Start = mtime.Picos(v)
		case "size":
			if v == 0 {
				return fl, fmt.Errorf("size 0")
			}
			fl.Size, hasSize = uint64(v), true
		case "prio":
			// Priorities are not modelled; accepted and ignored.
		case "trigger":
			fl.Trigger = int(v)
		case "send_done_trigger":
			fl.SendDoneTrigger = int(v)
		case "recv_done_trigger":
			fl.RecvDoneTrigger = int(v)
		default:
			return fl, fmt.Errorf("unknown flow attribute %q", f[i])
		}
	}
	if !hasSize {
		return fl, fmt.Errorf("flow %s has no size", f[0])
	}
	return fl, nil
}

func parseTrigger(f []string) (workload.Trigger, error) {
	var t workload.Trigger
	if len(f) < 4 || f[1] != "id" {
		return t, fmt.Errorf("trigger line: want \"trigger id N oneshot|multishot|barrier [count K]\"")
	}
	id, err := strconv.Atoi(f[2])
	if err != nil || id <= 0 {
		return t, fmt.Errorf("trigger id %q: want a positive integer", f[2])
	}
	t.ID = id
	switch f[3] {
	case "oneshot":
		t.Kind = workload.Oneshot
	case "multishot":
		t.Kind = workload.Multishot
	case "barrier":
		t.Kind = workload.Barrier
	default:
		return t, fmt.Errorf("trigger %d: kind %q, want oneshot, multishot or barrier", id, f[3])
	}
	rest := f[4:]
	if len(rest) == 2 && rest[0] == "count" {
		n, err := strconv.Atoi(rest[1])
		if err != nil || n < 1 {
			return t, fmt.Errorf("trigger %d: count %q", id, rest[1])
		}
		t.Count = n
	} else if len(rest) != 0 {
		return t, fmt.Errorf("trigger %d: unexpected %q", id, strings.Join(rest, " "))
	}
	if t.Kind == workload.Barrier && t.Count == 0 {
		return t, fmt.Errorf("barrier trigger %d needs a count", id)
	}
	return t, nil
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// Tier is one tier's section of a .topo file.
type Tier struct {
	DownlinkGbps      float64
	RadixDown         int
	RadixUp           int
	DownlinkLatencyNs int64
	SwitchLatencyNs   int64
	Oversubscribed    int
	Bundle            int
	QueueDown         int64 // bytes, 0 if absent
	QueueUp           int64
}

// TopoFile is a parsed .topo file.
type TopoFile struct {
	Name    string
	Nodes   int
	Tiers   []Tier
	Podsize int
}

// ReadTopoFile reads a topology file.
func ReadTopoFile(path string) (*TopoFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTopo(path, f)
}

// ReadTopo reads an htsim topology named name: "Nodes", "Tiers",
// "Podsize", then per tier "Tier i" followed by Downlink_speed_Gbps,
// Radix_Down, Radix_Up, Downlink_Latency_ns, Switch_Latency_ns and
// optionally Oversubscribed, Bundle, Queue_Down, Queue_Up (bytes). Keys
// are case-insensitive.
func ReadTopo(name string, in io.Reader) (*TopoFile, error) {
	r := newReader(name, in)
	t := &TopoFile{Name: baseName(name)}
	tiers := -1
	cur := -1
	for {
		f, ok := r.Next()
		if !ok {
			break
		}
		if len(f) != 2 {
			return nil, r.errf("want \"Key value\", got %q", strings.Join(f, " "))
		}
		k := strings.ToLower(f[0])
		if k == "downlink_speed_gbps" {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil || v <= 0 {
				return nil, r.errf("%s %q: want a positive speed", f[0], f[1])
			}
			if cur < 0 {
				return nil, r.errf("%s outside a Tier section", f[0])
			}
			t.Tiers[cur].DownlinkGbps = v
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || v < 0 {
			return nil, r.errf("%s %q: want a non-negative integer", f[0], f[1])
		}
		switch k {
		case "nodes":
			t.Nodes = int(v)
			continue
		case "tiers":
			if v < 2 || v > 3 {
				return nil, r.errf("Tiers %d: only 2 and 3 tiers are supported", v)
			}
			tiers = int(v)
			t.Tiers = make([]Tier, tiers)
			continue
		case "podsize":
			t.Podsize = int(v)
			continue
		case "tier":
			if tiers < 0 {
				return nil, r.errf("Tier before Tiers")
			}
			if int(v) >= tiers {
				return nil, r.errf("Tier %d: the file has %d tiers (0..%d)", v, tiers, tiers-1)
			}
			cur = int(v)
			continue
		}
		if cur < 0 {
			return nil, r.errf("%s outside a Tier section", f[0])
		}
		tr := &t.Tiers[cur]
		switch k {
		case "radix_down":
			tr.RadixDown = int(v)
		case "radix_up":
			tr.RadixUp = int(v)
		case "downlink_latency_ns":
			tr.DownlinkLatencyNs = v
		case "switch_latency_ns":
			tr.SwitchLatencyNs = v
		case "oversubscribed":
			tr.Oversubscribed = int(v)
		case "bundle":
			if v > 1 {
				return nil, r.errf("Bundle %d: parallel links are not supported", v)
			}
			tr.Bundle = int(v)
		case "queue_down":
			tr.QueueDown = v
		case "queue_up":
			tr.QueueUp = v
		default:
			return nil, r.errf("unknown key %q", f[0])
		}
	}
	if err := r.Err(); err != nil {
		return nil, &Error{File: name, Msg: err.Error()}
	}
	if t.Nodes < 2 {
		return nil, &Error{File: name, Msg: fmt.Sprintf("Nodes %d: want at least 2", t.Nodes)}
	}
	if tiers < 0 {
		return nil, &Error{File: name, Msg: "no Tiers line"}
	}
	for i, tr := range t.Tiers {
		if tr.DownlinkGbps == 0 || tr.RadixDown == 0 {
			return nil, &Error{File: name, Msg: fmt.Sprintf("Tier %d: Downlink_speed_Gbps and Radix_Down are required", i)}
		}
		if i < tiers-1 && tr.RadixUp == 0 {
			return nil, &Error{File: name, Msg: fmt.Sprintf("Tier %d: Radix_Up is required below the top tier", i)}
		}
	}
	return t, nil
}

// Build turns the file into a topology with planes planes (htsim's files
// describe one plane; MRC's multi-plane fabric repeats it per NIC port).
func (t *TopoFile) Build(planes int) (*topo.Topology, error) {
	t0 := t.Tiers[0]
	ns := func(v int64) time.Duration { return time.Duration(v) }
	var tp *topo.Topology
	var err error
	switch len(t.Tiers) {
	case 2:
		t1 := t.Tiers[1]
		nT0 := 0
		if t0.RadixDown > 0 {
			nT0 = t.Nodes / t0.RadixDown
		}
		if t1.RadixDown != nT0 {
			return nil, &Error{File: t.Name, Msg: fmt.Sprintf("Tier 1 Radix_Down %d: a two-tier Clos of %d nodes with %d per T0 has %d T0s, each linked once to every T1",
				t1.RadixDown, t.Nodes, t0.RadixDown, nT0)}
		}
		tp, err = topo.Clos2(topo.Clos2Config{
			Hosts: t.Nodes, Planes: planes, T0Down: t0.RadixDown, T0Up: t0.RadixUp,
			HostRate: int64(t0.DownlinkGbps * 1e9), FabricRate: int64(t1.DownlinkGbps * 1e9),
			HostDelay: ns(t0.DownlinkLatencyNs), FabricDelay: ns(t1.DownlinkLatencyNs),
			SwitchLatency: ns(t0.SwitchLatencyNs),
		})
	case 3:
		if planes != 1 {
			return nil, &Error{File: t.Name, Msg: "a three-tier topology has one plane"}
		}
		t1, t2 := t.Tiers[1], t.Tiers[2]
		pod := t.Podsize
		if pod == 0 {
			pod = t.Nodes
		}
		if t1.RadixDown != pod/max(t0.RadixDown, 1) || t2.RadixDown != t.Nodes/max(pod, 1) {
			return nil, &Error{File: t.Name, Msg: fmt.Sprintf("Tier 1 Radix_Down %d / Tier 2 Radix_Down %d do not match a fat tree of %d nodes in pods of %d",
				t1.RadixDown, t2.RadixDown, t.Nodes, pod)}
		}
		tp, err = topo.Clos3(topo.Clos3Config{
			Hosts: t.Nodes, T0Down: t0.RadixDown, T0Up: t0.RadixUp, PodSize: pod, T1Up: t1.RadixUp,
			HostRate: int64(t0.DownlinkGbps * 1e9), FabricRate: int64(t1.DownlinkGbps * 1e9),
			HostDelay: ns(t0.DownlinkLatencyNs), FabricDelay: ns(t1.DownlinkLatencyNs),
			SwitchLatency: ns(t0.SwitchLatencyNs),
		})
	}
	if err != nil {
		return nil, &Error{File: t.Name, Msg: err.Error()}
	}
	return tp, nil
}
