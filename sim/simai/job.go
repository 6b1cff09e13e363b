package simai

import (
	"fmt"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/job"
)

// Ranks returns how many ranks the workload runs on: all_gpus, or
// fallback (the fabric's hosts) when the header has none.
func (w *Workload) Ranks(fallback int) int {
	if w.GPUs > 0 {
		return w.GPUs
	}
	return fallback
}

// Job builds the training job of one iteration on ranks ranks (see
// Ranks), as SimAI's loop for the workload's policy runs it; the job's
// other fields (steps, placement, servers, channels) are left for the
// caller. Groups that do not divide the ranks are an error naming the
// file.
func (w *Workload) Job(ranks int) (job.Job, error) {
	g, err := w.groups(ranks)
	if err != nil {
		return job.Job{}, &Error{File: w.File, Msg: err.Error()}
	}
	j := job.Job{Name: w.Name, Ranks: make([][]job.Node, ranks)}
	for r := range ranks {
		b := &builder{w: w, g: g, rank: r}
		switch w.Policy {
		case Micro:
			b.micro()
		case Data:
			b.data()
		default:
			b.transformer()
		}
		j.Ranks[r] = b.nodes
	}
	return j, nil
}

// groups are the parallelism group sizes.
type groups struct{ ranks, tp, dp, ep, dpep int }

func (w *Workload) groups(ranks int) (groups, error) {
	g := groups{ranks: ranks, tp: w.TP, ep: w.EP}
	switch {
	case ranks < 1:
		return g, fmt.Errorf("no ranks")
	case w.PP != 1:
		return g, fmt.Errorf("pp %d: pipeline parallelism is not supported (SimAI's own group setup has no PP groups either)", w.PP)
	case w.Policy == Data || w.Policy == Micro:
		g.tp = 1
	}
	if ranks%g.tp != 0 {
		return g, fmt.Errorf("model_parallel_NPU_group %d does not divide the %d GPUs", g.tp, ranks)
	}
	g.dp = ranks / g.tp
	if g.dp%g.ep != 0 {
		return g, fmt.Errorf("ep %d does not divide the data-parallel group of %d (all_gpus %d / model_parallel_NPU_group %d)", g.ep, g.dp, ranks, g.tp)
	}
	g.dpep = g.dp / g.ep
	return g, nil
}

// members returns the ranks of rank r's group of kind k, in ring order.
// TP groups are tp consecutive ranks; the DP group of r is the ranks with
// r's place in every TP group; the EP group is ep consecutive TP groups'
// members at r's place; the DP_EP group takes every ep-th TP group.
func (g groups) members(k GroupKind, r int) []int {
	tpg, place := r/g.tp, r%g.tp
	var out []int
	switch k {
	case TP:
		for i := range g.tp {
			out = append(out, tpg*g.tp+i)
		}
	case DP:
		stride := g.ranks / g.dp
		for i := range g.dp {
			out = append(out, r%stride+i*stride)
		}
	case EP:
		first := tpg / g.ep * g.ep
		for i := range g.ep {
			out = append(out, (first+i)*g.tp+place)
		}
	case DPEP:
		for i := range g.dpep {
			out = append(out, (tpg%g.ep+i*g.ep)*g.tp+place)
		}
	}
	return out
}

// builder lays out one rank's nodes.
type builder struct {
	w     *Workload
	g     groups
	rank  int
	nodes []job.Node
}

// add appends a node after deps (0s dropped) and returns its ID.
func (b *builder) add(n job.Node, deps ...int) int {
	n.ID = len(b.nodes) + 1
	for _, d := range deps {
		if d != 0 {
			n.Deps = append(n.Deps, d)
		}
	}
	b.nodes = append(b.nodes, n)
	return n.ID
}

// compute adds layer l's compute of phase ph after dep.
func (b *builder) compute(l *Layer, ph *Phase, name string, dep int) int {
	return b.add(job.Node{Op: job.Compute, Name: l.Name + " " + name, Duration: mtime.Picos(ph.ComputeNs) * mtime.PicosPerNano}, dep)
}

// comm adds phase ph's collective after dep, or returns dep if it has
// none.
func (b *builder) comm(l *Layer, ph *Phase, name string, dep int) int {
	c := ph.Comm
	if c.Op == 0 || c.Bytes == 0 {
		return dep
	}
	return b.add(job.Node{Op: c.Op, Name: l.Name + " " + name + " " + c.Group.String(), Bytes: c.Bytes,
		Group: b.g.members(c.Group, b.rank)}, dep)
}

// transformer is SimAI's HYBRID_TRANSFORMER(_FWD_IN_BCKWD) loop: every
// layer's forward compute then its communication, waited for; then from
// the last layer back, the input gradient's compute and communication
// (waited for) and the weight gradient's compute, whose communication
// runs on under the layers before. Checkpoint recomputation is not
// modelled (the samples have none).
func (b *builder) transformer() {
	ls := b.w.Layers
	prev := 0
	for i := range ls {
		prev = b.comm(&ls[i], &ls[i].Fwd, "fwd", b.compute(&ls[i], &ls[i].Fwd, "fwd", prev))
	}
	for i := len(ls) - 1; i >= 0; i-- {
		prev = b.comm(&ls[i], &ls[i].IG, "ig", b.compute(&ls[i], &ls[i].IG, "ig", prev))
		prev = b.compute(&ls[i], &ls[i].WG, "wg", prev)
		b.comm(&ls[i], &ls[i].WG, "wg", prev)
	}
}

// data is SimAI's DATA loop: forward compute over the layers, then from
// the last layer back, the weight gradient's compute with its collective
// left running, then the input gradient's compute (not for layer 0).
func (b *builder) data() {
	ls := b.w.Layers
	prev := 0
	for i := range ls {
		prev = b.compute(&ls[i], &ls[i].Fwd, "fwd", prev)
	}
	for i := len(ls) - 1; i >= 0; i-- {
		prev = b.compute(&ls[i], &ls[i].WG, "wg", prev)
		b.comm(&ls[i], &ls[i].WG, "wg", prev)
		if i > 0 {
			prev = b.compute(&ls[i], &ls[i].IG, "ig", prev)
		}
	}
}

// micro is SimAI's MICRO loop: every layer's weight-gradient collective,
// all at once.
func (b *builder) micro() {
	for i := range b.w.Layers {
		b.comm(&b.w.Layers[i], &b.w.Layers[i].WG, "wg", 0)
	}
}
