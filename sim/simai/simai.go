// Package simai reads the text workloads of SimAI and ASTRA-sim (the
// layer-by-layer format AICB writes, headed HYBRID_TRANSFORMER_FWD_IN_BCKWD,
// HYBRID_TRANSFORMER, DATA or MICRO) and turns them into training jobs
// (package sim/job) as SimAI's workload loop runs them. The format, its
// units and its group rules are in docs/workloads.md; errors name the
// file and line.
package simai

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openmrc/mrc/internal/host/lines"
	"github.com/openmrc/mrc/sim/job"
)

// Error is a parse error at a line of a file (0: the file as a whole).
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Policy is the training loop a workload file names on its first line.
type Policy string

const (
	// FwdInBckwd (HYBRID_TRANSFORMER_FWD_IN_BCKWD) and Transformer
	// (HYBRID_TRANSFORMER): forward over the layers with blocking
	// tensor-parallel communication, then backward: input gradient with
	// blocking communication, weight gradient with data-parallel
	// communication left running.
	FwdInBckwd  Policy = "HYBRID_TRANSFORMER_FWD_IN_BCKWD"
	Transformer Policy = "HYBRID_TRANSFORMER"
	// Data (DATA): forward compute, then backward with only the weight
	// gradients' communication, over all ranks.
	Data Policy = "DATA"
	// Micro (MICRO): every layer's weight-gradient collective at once.
	Micro Policy = "MICRO"
)

// GroupKind is which parallelism group a collective runs over.
type GroupKind uint8

const (
	TP   GroupKind = iota + 1 // tensor parallel: model_parallel_NPU_group consecutive ranks
	DP                        // data parallel: ranks with the same place in every TP group
	EP                        // expert parallel
	DPEP                      // data parallel among experts (DP / EP)
)

func (g GroupKind) String() string {
	return [...]string{"?", "TP", "DP", "EP", "DP_EP"}[min(int(g), 4)]
}

// Comm is one phase's collective; Op 0 means none.
type Comm struct {
	Op    job.Op
	Group GroupKind
	Bytes uint64
}

// Phase is a layer's compute (in ticks: nanoseconds, as SimAI's ns-3
// back end schedules them) and the collective after it.
type Phase struct {
	ComputeNs int64
	Comm      Comm
}

// Layer is one line: forward pass, input gradient, weight gradient.
type Layer struct {
	Name        string
	Line        int
	Fwd, IG, WG Phase
	// WGUpdateNs is the last column (weight update time); SimAI's loop
	// does not wait for it, and neither do we.
	WGUpdateNs int64
}

// Workload is a parsed workload file.
type Workload struct {
	Name   string
	File   string
	Policy Policy
	// The header's parallelism (1 when absent): TP is
	// model_parallel_NPU_group; GPUs is all_gpus (0 when absent).
	TP, EP, PP, VPP, GA, GPUs int
	Layers                    []Layer
}

// ReadFile reads the workload file at path.
func ReadFile(path string) (*Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(path, f)
}

// Read reads a workload file named name: its header line, the layer
// count, then one line per layer of twelve fields,
//
//	name dependency fwd_compute fwd_comm fwd_bytes ig_compute ig_comm ig_bytes wg_compute wg_comm wg_bytes wg_update
func Read(name string, in io.Reader) (*Workload, error) {
	r := lines.NewReader(in, 1<<20)
	errf := func(line int, format string, a ...any) error {
		return &Error{File: name, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	w := &Workload{Name: strings.TrimSuffix(filepath.Base(name), filepath.Ext(name)), File: name,
		TP: 1, EP: 1, PP: 1, VPP: 1, GA: 1}
	head, ok := r.Next()
	if !ok {
		return nil, readErr(r, errf, "empty file: want a header line such as HYBRID_TRANSFORMER_FWD_IN_BCKWD")
	}
	if err := w.header(head, func(f string, a ...any) error { return errf(r.Line(), f, a...) }); err != nil {
		return nil, err
	}
	count, ok := r.Next()
	if !ok {
		return nil, readErr(r, errf, "missing the layer count after the header")
	}
	n, err := strconv.Atoi(count[0])
	if len(count) != 1 || err != nil || n < 1 {
		return nil, errf(r.Line(), "layer count %q: want one positive number", strings.Join(count, " "))
	}
	for {
		f, ok := r.Next()
		if !ok {
			break
		}
		if len(w.Layers) == n {
			return nil, errf(r.Line(), "more layer lines than the %d announced", n)
		}
		l, err := parseLayer(f, w.Policy)
		if err != nil {
			return nil, errf(r.Line(), "%v", err)
		}
		l.Line = r.Line()
		w.Layers = append(w.Layers, l)
	}
	if err := r.Err(); err != nil {
		return nil, errf(r.Line()+1, "%v", err)
	}
	if len(w.Layers) != n {
		return nil, errf(0, "%d layers announced, %d given", n, len(w.Layers))
	}
	return w, nil
}

func readErr(r *lines.Reader, errf func(int, string, ...any) error, msg string) error {
	if err := r.Err(); err != nil {
		return errf(r.Line()+1, "%v", err)
	}
	return errf(0, "%s", msg)
}

// header reads the first line: the policy and "key: value" pairs.
func (w *Workload) header(f []string, errf func(string, ...any) error) error {
	switch p := Policy(f[0]); p {
	case FwdInBckwd, Transformer, Data, Micro:
		w.Policy = p
	default:
		return errf("training loop %q: want HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_TRANSFORMER, DATA or MICRO", f[0])
	}
	fields := map[string]*int{"model_parallel_NPU_group:": &w.TP, "ep:": &w.EP, "pp:": &w.PP, "vpp:": &w.VPP,
		"ga:": &w.GA, "all_gpus:": &w.GPUs}
	for i := 1; i < len(f); i++ {
		p, ok := fields[f[i]]
		if !ok {
			continue // checkpoints, pp_comm and the like: not used
		}
		if i+1 >= len(f) {
			return errf("%s: missing its value", f[i])
		}
		v, err := strconv.Atoi(f[i+1])
		if err != nil || v < 1 {
			return errf("%s %q: want a positive number", f[i], f[i+1])
		}
		*p = v
		i++
	}
	return nil
}

func parseLayer(f []string, p Policy) (Layer, error) {
	if len(f) != 12 {
		return Layer{}, fmt.Errorf("layer line has %d fields, want 12 (name, dependency, then compute, communication, bytes for fwd, ig and wg, and the update time)", len(f))
	}
	l := Layer{Name: f[0]}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return l, fmt.Errorf("dependency %q: not a number", f[1])
	}
	phases := []*Phase{&l.Fwd, &l.IG, &l.WG}
	for i, ph := range phases {
		c, err := strconv.ParseInt(f[2+3*i], 10, 64)
		if err != nil || c < 0 {
			return l, fmt.Errorf("%s compute time %q: want a count of nanoseconds", phaseName[i], f[2+3*i])
		}
		ph.ComputeNs = c
		def := TP
		if i == 2 || p == Data || p == Micro {
			def = DP
		}
		if ph.Comm, err = parseComm(f[3+3*i], f[4+3*i], def); err != nil {
			return l, fmt.Errorf("%s: %v", phaseName[i], err)
		}
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil || u < 0 {
		return l, fmt.Errorf("weight update time %q: want a count of nanoseconds", f[11])
	}
	l.WGUpdateNs = u
	return l, nil
}

var phaseName = [...]string{"forward", "input gradient", "weight gradient"}

var commOps = map[string]job.Op{"ALLREDUCE": job.AllReduce, "ALLGATHER": job.AllGather,
	"REDUCESCATTER": job.ReduceScatter, "ALLTOALL": job.AllToAll}

// parseComm reads a collective kind (NONE, or an operation with an
// optional _EP or _DP_EP group suffix) and its size.
func parseComm(kind, size string, def GroupKind) (Comm, error) {
	b, err := strconv.ParseUint(size, 10, 64)
	if err != nil {
		return Comm{}, fmt.Errorf("communication size %q: want a count of bytes", size)
	}
	if kind == "NONE" {
		return Comm{}, nil
	}
	c := Comm{Group: def, Bytes: b}
	base := kind
	switch {
	case strings.HasSuffix(kind, "_DP_EP"):
		base, c.Group = strings.TrimSuffix(kind, "_DP_EP"), DPEP
	case strings.HasSuffix(kind, "_EP"):
		base, c.Group = strings.TrimSuffix(kind, "_EP"), EP
	}
	op, ok := commOps[base]
	if !ok {
		return Comm{}, fmt.Errorf("unknown collective %q (want NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER or ALLTOALL, optionally with _EP or _DP_EP)", kind)
	}
	c.Op = op
	return c, nil
}
