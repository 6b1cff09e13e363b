package job

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/workload"
)

// Plan is a compiled job: the workload that runs it on the fabric, and
// what Report needs to read steps and collectives back out of a run.
type Plan struct {
	Job      Job // with the defaults filled in
	Workload *workload.Workload
	// Hosts[r] is rank r's host.
	Hosts []int
	// Conns is how many persistent connections (QP pairs) the job opens.
	Conns int
	// TriggerHosts[i] is the host Workload.Triggers[i] belongs to: the
	// rank whose step, node or transfer it is. The flows it starts leave
	// from that host, and it waits on another host only for a rank being
	// ready (Job.ReadyLatency), a transfer over the scale-up domain or a
	// collective inside a server, after a delay (the simulator can then
	// run hosts in several partitions).
	TriggerHosts []int
	// TriggerOffset is where Workload's triggers begin among the run's
	// when it runs merged after other workloads' (Report reads their
	// times there); 0 when it runs alone. FlowOffset is the same for its
	// flows.
	TriggerOffset, FlowOffset int

	ends  [][]int // ends[s][r]: the trigger ID of rank r's step s end, 0 if it has no nodes
	nodes []nodeRef
	colls []collRef
}

// nodeRef is one node of one rank in one step, as compiled.
type nodeRef struct {
	step, rank  int
	node        *Node
	start, done int // trigger IDs
	coll        int // index in Plan.colls, or -1
}

// collRef is one collective (or send/recv pair) in one step.
type collRef struct {
	step    int
	name    string
	op      Op
	bytes   uint64
	ranks   int
	scaleUp bool  // every transfer stays inside servers
	nodes   []int // indexes in Plan.nodes
	// flows are its flows' indexes in Workload.Flows: [flows[0], flows[1]).
	flows [2]int
}

// Defaults fills the zero fields of j with their defaults.
func (j *Job) Defaults() {
	if j.Steps == 0 {
		j.Steps = 1
	}
	if j.Placement == "" {
		j.Placement = Packed
	}
	if j.GPUsPerServer == 0 {
		j.GPUsPerServer = 8
	}
	if j.ScaleUp == (ScaleUp{}) {
		j.ScaleUp = DefaultScaleUp
	}
	if j.Channels == 0 {
		j.Channels = 1
	}
	if j.Chunks == 0 {
		j.Chunks = 4
	}
	if j.QPsPerConnection == 0 {
		j.QPsPerConnection = 1
	}
	if j.Algorithm == "" {
		j.Algorithm = Ring
	}
}

// Compile checks job j against a fabric of hosts hosts and compiles it
// into a workload: every node of every step becomes triggers, every
// transfer over the fabric flows on persistent connections, every
// transfer inside a server a delay. Errors name the rank and node.
func Compile(j Job, hosts int) (*Plan, error) {
	j.Defaults()
	if err := j.check(hosts); err != nil {
		return nil, err
	}
	c := &compiler{p: &Plan{Job: j, Workload: &workload.Workload{Name: j.Name}}, j: &j, conns: map[[4]int]int{}}
	c.p.Hosts = place(&j, hosts)
	insts, err := j.match()
	if err != nil {
		return nil, err
	}
	for s := range j.Steps {
		c.step(s, insts)
	}
	for i := range c.p.Workload.Triggers {
		if t := &c.p.Workload.Triggers[i]; t.Kind == workload.Barrier && t.Count == 0 {
			t.Kind = workload.AtStart
		}
	}
	c.p.Conns = len(c.conns)
	return c.p, nil
}

func (j *Job) check(hosts int) error {
	n := len(j.Ranks)
	switch {
	case n == 0:
		return fmt.Errorf("job: no ranks")
	case n > hosts:
		return fmt.Errorf("job: %d ranks, but the fabric has %d hosts", n, hosts)
	case j.Steps < 1:
		return fmt.Errorf("job: steps %d, want >= 1", j.Steps)
	case j.GPUsPerServer < 1:
		return fmt.Errorf("job: gpus_per_server %d, want >= 1", j.GPUsPerServer)
	case j.Channels < 1 || j.Chunks < 1 || j.QPsPerConnection < 1:
		return fmt.Errorf("job: channels %d, chunks %d, qps_per_connection %d: want >= 1", j.Channels, j.Chunks, j.QPsPerConnection)
	case j.ScaleUp.BitsPerSec <= 0 || j.ScaleUp.Latency < 0:
		return fmt.Errorf("job: scale-up bandwidth %d b/s, latency %v: want a positive bandwidth", j.ScaleUp.BitsPerSec, j.ScaleUp.Latency)
	}
	switch j.Algorithm {
	case Ring, HalvingDoubling:
	default:
		return fmt.Errorf("job: unknown algorithm %q (want ring or halving_doubling)", j.Algorithm)
	}
	switch j.Placement {
	case Packed, Random:
	case Rail:
		if servers := (n + j.GPUsPerServer - 1) / j.GPUsPerServer; servers*j.GPUsPerServer > hosts {
			return fmt.Errorf("job: rail placement of %d servers of %d GPUs needs %d hosts, the fabric has %d", servers, j.GPUsPerServer, servers*j.GPUsPerServer, hosts)
		}
	default:
		return fmt.Errorf("job: unknown placement %q (want packed, random or rail)", j.Placement)
	}
	for r, nodes := range j.Ranks {
		ids := map[int]bool{}
		for _, nd := range nodes {
			if nd.ID <= 0 || ids[nd.ID] {
				return fmt.Errorf("job: rank %d node %d: node IDs must be positive and distinct on a rank", r, nd.ID)
			}
			ids[nd.ID] = true
		}
		for _, nd := range nodes {
			if err := nd.check(r, n, ids, j.Algorithm); err != nil {
				return err
			}
		}
		if err := acyclic(r, nodes); err != nil {
			return err
		}
	}
	return nil
}

func (nd *Node) check(r, ranks int, ids map[int]bool, alg Algorithm) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("job: rank %d node %d (%s): %s", r, nd.ID, nd.Op, fmt.Sprintf(format, a...))
	}
	for _, d := range nd.Deps {
		if !ids[d] || d == nd.ID {
			return bad("depends on node %d, which is not another node of the rank", d)
		}
	}
	switch {
	case nd.Op == Compute:
		if nd.Duration < 0 {
			return bad("negative duration")
		}
	case nd.Op.Collective():
		n := len(nd.Group)
		if nd.Group == nil {
			n = ranks
		}
		if nd.Algorithm != "" {
			alg = nd.Algorithm
		}
		switch alg {
		case Ring:
		case HalvingDoubling:
			if nd.Op == AllToAll && nd.Algorithm != "" {
				return bad("halving_doubling is for all_reduce, all_gather and reduce_scatter")
			}
			if nd.Op != AllToAll && n&(n-1) != 0 {
				return bad("halving_doubling needs a power-of-two group, not %d ranks", n)
			}
		default:
			return bad("unknown algorithm %q (want ring or halving_doubling)", alg)
		}
		if nd.Group == nil {
			return nil
		}
		seen := map[int]bool{}
		for _, g := range nd.Group {
			if g < 0 || g >= ranks || seen[g] {
				return bad("group %v: want distinct ranks of 0..%d", nd.Group, ranks-1)
			}
			seen[g] = true
		}
		if !seen[r] {
			return bad("group %v does not include the rank", nd.Group)
		}
	case nd.Op == Send || nd.Op == Recv:
		if nd.Peer < 0 || nd.Peer >= ranks || nd.Peer == r {
			return bad("peer %d: want another rank of 0..%d", nd.Peer, ranks-1)
		}
	default:
		return bad("unknown operation")
	}
	return nil
}

// acyclic checks that the nodes' dependencies have no cycle.
func acyclic(r int, nodes []Node) error {
	index := map[int]int{}
	for i, nd := range nodes {
		index[nd.ID] = i
	}
	state := make([]uint8, len(nodes)) // 0 new, 1 on the path, 2 done
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 1:
			return fmt.Errorf("job: rank %d node %d: its dependencies form a cycle", r, nodes[i].ID)
		case 2:
			return nil
		}
		state[i] = 1
		for _, d := range nodes[i].Deps {
			if err := visit(index[d]); err != nil {
				return err
			}
		}
		state[i] = 2
		return nil
	}
	for i := range nodes {
		if err := visit(i); err != nil {
			return err
		}
	}
	return nil
}

// place returns each rank's host.
func place(j *Job, hosts int) []int {
	n := len(j.Ranks)
	out := make([]int, n)
	switch j.Placement {
	case Random:
		perm := rand.New(rand.NewPCG(j.Seed, 0x7a11)).Perm(hosts)
		copy(out, perm[:n])
	case Rail:
		g := j.GPUsPerServer
		servers := (n + g - 1) / g
		for r := range out {
			out[r] = (r%g)*servers + r/g
		}
	default:
		for r := range out {
			out[r] = r
		}
	}
	return out
}

// member is one rank's node in a matched collective or send/recv pair.
type member struct{ rank, node int }

// instance is one collective of one step, or one send/recv pair: its
// members in ring order (a pair: the sender then the receiver).
type instance struct {
	op      Op
	alg     Algorithm
	bytes   uint64
	name    string
	members []member
}

// match pairs the ranks' collectives (the k-th of each group on each
// member) and their sends with receives.
func (j *Job) match() ([]instance, error) {
	var insts []instance
	byKey := map[string][]int{} // group key → instances, in order
	next := map[string]map[int]int{}
	type pairKey struct{ src, dst, tag int }
	sends, recvs := map[pairKey][]member{}, map[pairKey][]member{}
	var pairOrder []pairKey
	for r, nodes := range j.Ranks {
		for i, nd := range nodes {
			switch {
			case nd.Op.Collective():
				g := nd.Group
				if g == nil {
					g = allRanks(len(j.Ranks))
				}
				key := groupKey(g)
				if next[key] == nil {
					next[key] = map[int]int{}
				}
				k := next[key][r]
				next[key][r]++
				alg := nd.Algorithm
				if alg == "" || nd.Op == AllToAll {
					alg = j.Algorithm
				}
				if k == len(byKey[key]) {
					insts = append(insts, instance{op: nd.Op, alg: alg, bytes: nd.Bytes, name: nd.Name, members: make([]member, len(g))})
					for m := range g {
						insts[len(insts)-1].members[m] = member{-1, -1}
					}
					byKey[key] = append(byKey[key], len(insts)-1)
				}
				in := &insts[byKey[key][k]]
				if in.op != nd.Op || in.bytes != nd.Bytes || in.alg != alg {
					return nil, fmt.Errorf("job: rank %d node %d: %s of %d bytes (%s), but the matching collective of group %v on another rank is %s of %d bytes (%s)",
						r, nd.ID, nd.Op, nd.Bytes, alg, g, in.op, in.bytes, in.alg)
				}
				pos := slices.Index(g, r)
				in.members[pos] = member{r, i}
			case nd.Op == Send:
				k := pairKey{r, nd.Peer, nd.Tag}
				if len(sends[k]) == 0 && len(recvs[k]) == 0 {
					pairOrder = append(pairOrder, k)
				}
				sends[k] = append(sends[k], member{r, i})
			case nd.Op == Recv:
				k := pairKey{nd.Peer, r, nd.Tag}
				if len(sends[k]) == 0 && len(recvs[k]) == 0 {
					pairOrder = append(pairOrder, k)
				}
				recvs[k] = append(recvs[k], member{r, i})
			}
		}
	}
	for i := range insts {
		for _, m := range insts[i].members {
			if m.rank < 0 {
				return nil, fmt.Errorf("job: %s %q: a member of its group has fewer collectives of that group than the others", insts[i].op, insts[i].name)
			}
		}
	}
	for _, k := range pairOrder {
		s, rv := sends[k], recvs[k]
		if len(s) != len(rv) {
			return nil, fmt.Errorf("job: rank %d sends %d messages of tag %d to rank %d, which receives %d", k.src, len(s), k.tag, k.dst, len(rv))
		}
		for i := range s {
			snd, rcv := &j.Ranks[s[i].rank][s[i].node], &j.Ranks[rv[i].rank][rv[i].node]
			if snd.Bytes != rcv.Bytes {
				return nil, fmt.Errorf("job: rank %d node %d sends %d bytes, but rank %d node %d receives %d", k.src, snd.ID, snd.Bytes, k.dst, rcv.ID, rcv.Bytes)
			}
			insts = append(insts, instance{op: Send, bytes: snd.Bytes, name: snd.Name, members: []member{s[i], rv[i]}})
		}
	}
	return insts, nil
}

func allRanks(n int) []int {
	g := make([]int, n)
	for i := range g {
		g[i] = i
	}
	return g
}

func groupKey(g []int) string {
	s := slices.Clone(g)
	slices.Sort(s)
	var b strings.Builder
	for _, r := range s {
		b.WriteString(strconv.Itoa(r))
		b.WriteByte(',')
	}
	return b.String()
}

// compiler builds a Plan's workload.
type compiler struct {
	p     *Plan
	j     *Job
	conns map[[4]int]int // (src host, dst host, channel, QP) → Conn
}

// trigger adds a barrier trigger of rank's (its count grows with link)
// and returns its ID.
func (c *compiler) trigger(delay mtime.Picos, rank int) int {
	tr := &c.p.Workload.Triggers
	id := len(*tr) + 1
	*tr = append(*tr, workload.Trigger{ID: id, Kind: workload.Barrier, Delay: delay})
	c.p.TriggerHosts = append(c.p.TriggerHosts, c.p.Hosts[rank])
	return id
}

// ready returns a trigger of rank at that fires when at learns that rank
// from has started (its trigger start fired): after the scale-up latency
// if they share a server, else after Job.ReadyLatency (start itself when
// that is 0).
func (c *compiler) ready(start, at, from int) int {
	lat := c.j.ReadyLatency
	if c.local(at, from) {
		lat = c.j.ScaleUp.Latency
	}
	if lat <= 0 {
		return start
	}
	r := c.trigger(mtime.PicosOf(lat), at)
	c.link(start, r)
	return r
}

// link makes trigger from activate trigger to once more.
func (c *compiler) link(from, to int) {
	tr := c.p.Workload.Triggers
	tr[from-1].Activates = append(tr[from-1].Activates, to)
	tr[to-1].Count++
}

// step compiles step s: every rank's nodes, then the instances that
// join them.
func (c *compiler) step(s int, insts []instance) {
	j, p := c.j, c.p
	ends := make([]int, len(j.Ranks))
	offset := make([]int, len(j.Ranks)) // rank r's first node in p.nodes
	for r, nodes := range j.Ranks {
		offset[r] = len(p.nodes)
		if len(nodes) == 0 {
			continue
		}
		ends[r] = c.trigger(0, r)
		for i := range nodes {
			nd := &nodes[i]
			ref := nodeRef{step: s, rank: r, node: nd, coll: -1}
			if nd.Op == Compute {
				ref.start = c.trigger(nd.Duration, r)
				ref.done = ref.start
			} else {
				ref.start, ref.done = c.trigger(0, r), c.trigger(0, r)
			}
			p.nodes = append(p.nodes, ref)
		}
		index := map[int]int{}
		for i, nd := range nodes {
			index[nd.ID] = offset[r] + i
		}
		for i, nd := range nodes {
			ref := &p.nodes[offset[r]+i]
			for _, d := range nd.Deps {
				c.link(p.nodes[index[d]].done, ref.start)
			}
			if len(nd.Deps) == 0 && s > 0 {
				c.link(p.ends[s-1][r], ref.start)
			}
			c.link(ref.done, ends[r])
		}
	}
	p.ends = append(p.ends, ends)
	for _, in := range insts {
		ci := len(p.colls)
		cr := collRef{step: s, name: in.name, op: in.op, bytes: in.bytes, ranks: len(in.members), scaleUp: true}
		var starts, dones []int
		for _, m := range in.members {
			k := offset[m.rank] + m.node
			p.nodes[k].coll = ci
			cr.nodes = append(cr.nodes, k)
			starts = append(starts, p.nodes[k].start)
			dones = append(dones, p.nodes[k].done)
		}
		ranks := make([]int, len(in.members))
		for i, m := range in.members {
			ranks[i] = m.rank
		}
		for i := range ranks {
			if !c.local(ranks[i], ranks[(i+1)%len(ranks)]) {
				cr.scaleUp = false
			}
		}
		cr.flows[0] = len(p.Workload.Flows)
		c.instance(in, ranks, starts, dones)
		cr.flows[1] = len(p.Workload.Flows)
		p.colls = append(p.colls, cr)
	}
}

// local reports whether ranks a and b share a server.
func (c *compiler) local(a, b int) bool {
	return a/c.j.GPUsPerServer == b/c.j.GPUsPerServer
}

// instance compiles one collective or send/recv pair between the
// members' start and done triggers.
func (c *compiler) instance(in instance, ranks, starts, dones []int) {
	n := len(ranks)
	if in.bytes == 0 || n == 1 {
		for i := range ranks {
			c.link(starts[i], dones[i])
		}
		return
	}
	if in.op.Collective() && c.oneServer(ranks) {
		c.inServer(in, ranks, starts, dones)
		return
	}
	switch {
	case in.alg == HalvingDoubling && in.op != AllToAll:
		c.halvingDoubling(ranks, starts, dones, in.bytes, in.op != AllGather, in.op != ReduceScatter)
	case in.op == AllReduce:
		c.ring(ranks, starts, dones, in.bytes, 2*(n-1))
	case in.op == AllGather, in.op == ReduceScatter:
		c.ring(ranks, starts, dones, in.bytes, n-1)
	case in.op == AllToAll:
		c.allToAll(ranks, starts, dones, in.bytes)
	case in.op == Send:
		t := c.trigger(0, ranks[0])
		c.link(starts[0], t)
		c.link(c.ready(starts[1], ranks[0], ranks[1]), t)
		c.transfer(ranks[0], ranks[1], 0, in.bytes, t, dones[0], dones[1], 1)
	}
}

// oneServer reports whether ranks all share a server.
func (c *compiler) oneServer(ranks []int) bool {
	for _, r := range ranks {
		if !c.local(r, ranks[0]) {
			return false
		}
	}
	return true
}

// inServer compiles a collective whose ranks share a server as one delay
// from the last member's start to every member's end, by the alpha-beta
// model of its algorithm over the scale-up domain: a latency per step
// and (n−1)·S/n at the GPU's rate per pass (a ring's n−1 steps or
// halving's or doubling's log₂ n; an all-reduce is two passes); an
// all-to-all is the latency plus (n−1)·S/n at that rate.
func (c *compiler) inServer(in instance, ranks, starts, dones []int) {
	n := uint64(len(starts))
	su := c.j.ScaleUp
	ser := func(b uint64) mtime.Picos { return mtime.Picos(float64(b) * 8 / float64(su.BitsPerSec) * 1e12) }
	lat := mtime.PicosOf(su.Latency)
	var d mtime.Picos
	steps := mtime.Picos(n - 1) // ring steps, or exchanges of halving or doubling
	if in.alg == HalvingDoubling {
		steps = mtime.Picos(bits.Len64(n) - 1)
	}
	pass := mtime.Picos(n-1) * ser(in.bytes/n) // (n−1)·S/n through the GPU's link
	switch in.op {
	case AllReduce:
		d = 2 * (steps*lat + pass)
	case AllGather, ReduceScatter:
		d = steps*lat + pass
	case AllToAll:
		d = lat + ser((n-1)*(in.bytes/n))
	}
	// Each member's copy of the delay, so that no member's end waits on
	// another's trigger.
	for i := range dones {
		t := c.trigger(d, ranks[i])
		for _, st := range starts {
			c.link(st, t)
		}
		c.link(t, dones[i])
	}
}

// ring compiles a ring collective of steps ring steps, each moving
// bytes/n from every member to the next, on every channel, in chunks: a
// chunk is forwarded once it has arrived from the previous step; the
// first step waits for the member to have started and for its next
// neighbour's readiness to reach it (ready). A member is done
// when its last step's chunks have been sent and received. Transfers
// inside a server are serialised per channel, as on one link.
func (c *compiler) ring(ranks, starts, dones []int, bytes uint64, steps int) {
	j := c.j
	n, chunks := len(ranks), j.Chunks
	piece := bytes / uint64(n)
	at := func(k, i, ck int) int { return (k*n+i)*chunks + ck }
	hop := make([]int, steps*n*chunks)
	ready := make([]int, n) // rank i knows its next has started
	for i := range n {
		ready[i] = c.ready(starts[(i+1)%n], ranks[i], ranks[(i+1)%n])
	}
	for ch := range j.Channels {
		for x := range hop {
			hop[x] = c.trigger(0, ranks[x/chunks%n])
		}
		for k := range steps {
			for i := range n {
				nx := (i + 1) % n
				local := c.local(ranks[i], ranks[nx])
				for ck := range chunks {
					t := hop[at(k, i, ck)]
					if k == 0 {
						c.link(starts[i], t)
						c.link(ready[i], t)
					}
					if local && ck > 0 {
						c.link(hop[at(k, i, ck-1)], t)
					} else if local && k > 0 {
						c.link(hop[at(k-1, i, chunks-1)], t)
					}
					sendDone, recvDone := 0, dones[nx]
					if k+1 < steps {
						recvDone = hop[at(k+1, nx, ck)]
					} else {
						sendDone = dones[i]
					}
					size := max(1, split(piece, j.Channels*chunks, ch*chunks+ck))
					c.transfer(ranks[i], ranks[nx], ch, size, t, sendDone, recvDone, 1)
				}
			}
		}
	}
}

// halvingDoubling compiles a collective by recursive halving (halve: the
// reduce-scatter, exchanges with the partner at distance n/2, n/4, …, 1
// of S/2, S/4, …, S/n) then recursive doubling (double: the all-gather,
// distance 1, 2, …, n/2, S/n, 2S/n, …, S/2); n is a power of two. Each
// exchange is split over the channels and chunks; it starts when the
// rank has received all of its previous exchange (the first: when the
// rank has started and its partner's readiness has reached it), and a
// member is done when its last exchange has been sent and received. Transfers inside a server are serialised
// per channel.
func (c *compiler) halvingDoubling(ranks, starts, dones []int, bytes uint64, halve, double bool) {
	n := len(ranks)
	type exchange struct {
		dist int
		size uint64
	}
	var xs []exchange
	if halve {
		for d := n / 2; d >= 1; d /= 2 {
			xs = append(xs, exchange{d, bytes / uint64(n) * uint64(d)})
		}
	}
	if double {
		for d := 1; d < n; d *= 2 {
			xs = append(xs, exchange{d, bytes / uint64(n) * uint64(d)})
		}
	}
	j := c.j
	got := make([]int, n) // got[i]: rank i has received its previous exchange
	for i := range got {  // before the first: its partner has started
		p := i ^ xs[0].dist
		got[i] = c.ready(starts[p], ranks[i], ranks[p])
	}
	for k, x := range xs {
		last := k == len(xs)-1
		next := make([]int, n)
		if !last {
			for i := range next {
				next[i] = c.trigger(0, ranks[i])
			}
		}
		for i := range n {
			p := i ^ x.dist
			local := c.local(ranks[i], ranks[p])
			for ch := range j.Channels {
				prev := 0
				for ck := range j.Chunks {
					t := c.trigger(0, ranks[i])
					if k == 0 {
						c.link(starts[i], t)
					}
					c.link(got[i], t)
					if local && prev != 0 {
						c.link(prev, t)
					}
					prev = t
					sendDone, recvDone := 0, next[p]
					if last {
						sendDone, recvDone = dones[i], dones[p]
					}
					size := max(1, split(x.size, j.Channels*j.Chunks, ch*j.Chunks+ck))
					c.transfer(ranks[i], ranks[p], ch, size, t, sendDone, recvDone, 1)
				}
			}
		}
		got = next
	}
}

// allToAll compiles an all-to-all: every member sends bytes/n to every
// other at once, once it has started and the other's readiness has
// reached it; a member is done when it has
// sent and received all of them. A GPU's transfers inside its server
// share its scale-up bandwidth.
func (c *compiler) allToAll(ranks, starts, dones []int, bytes uint64) {
	n := len(ranks)
	size := max(1, bytes/uint64(n))
	for i := range n {
		peers := 0
		for k := range n {
			if k != i && c.local(ranks[i], ranks[k]) {
				peers++
			}
		}
		for k := range n {
			if k == i {
				continue
			}
			t := c.trigger(0, ranks[i])
			c.link(starts[i], t)
			c.link(c.ready(starts[k], ranks[i], ranks[k]), t)
			if c.local(ranks[i], ranks[k]) {
				c.transfer(ranks[i], ranks[k], 0, size, t, dones[i], dones[k], peers)
				continue
			}
			for ch := range c.j.Channels {
				c.transfer(ranks[i], ranks[k], ch, max(1, split(size, c.j.Channels, ch)), t, dones[i], dones[k], 1)
			}
		}
	}
}

// transfer adds size bytes from rank a to rank b on channel ch, started
// by trigger start; its completion activates sendDone and recvDone (0:
// none). Between servers it is QPsPerConnection flows on the pair's
// persistent connections, the bytes split evenly; inside a server it is
// a delay of start's (which must be start's only transfer), the bytes at
// share-th of the scale-up bandwidth, then the scale-up latency.
func (c *compiler) transfer(a, b, ch int, size uint64, start, sendDone, recvDone, share int) {
	wl := c.p.Workload
	if c.local(a, b) {
		// start fires when the bytes are through the GPU's link (the
		// next transfer on it may begin), arrive a latency later.
		su := c.j.ScaleUp
		ps := float64(size) * 8 * float64(share) / float64(su.BitsPerSec) * 1e12
		wl.Triggers[start-1].Delay = mtime.Picos(ps)
		for _, side := range [2][2]int{{sendDone, a}, {recvDone, b}} {
			if side[0] != 0 {
				arrive := c.trigger(mtime.PicosOf(su.Latency), side[1]) // at each end, for its own
				c.link(start, arrive)
				c.link(arrive, side[0])
			}
		}
		return
	}
	qps := c.j.QPsPerConnection
	src, dst := c.p.Hosts[a], c.p.Hosts[b]
	for q := range qps {
		key := [4]int{src, dst, ch, q}
		conn, ok := c.conns[key]
		if !ok {
			conn = len(c.conns) + 1
			c.conns[key] = conn
		}
		wl.Flows = append(wl.Flows, workload.Flow{ID: len(wl.Flows) + 1, Src: src, Dst: dst,
			Size: max(1, split(size, qps, q)), Trigger: start, SendDoneTrigger: sendDone, RecvDoneTrigger: recvDone, Conn: conn})
		for _, t := range []int{sendDone, recvDone} {
			if t != 0 {
				wl.Triggers[t-1].Count++
			}
		}
	}
}

// split returns part i of total cut into n near-equal parts.
func split(total uint64, n, i int) uint64 {
	p := total / uint64(n)
	if uint64(i) < total%uint64(n) {
		p++
	}
	return p
}
