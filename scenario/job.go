package scenario

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/sim/chakra"
	"github.com/openmrc/mrc/sim/job"
	"github.com/openmrc/mrc/sim/simai"
	"github.com/openmrc/mrc/sim/topo"
)

// readyWire is the bytes on the wire of the message that tells a rank
// its peer is ready (Job.ReadyLatency): a control packet, sized as the
// simulator's base RTT sizes the answer to a data packet.
const readyWire = 144 + 38

// jobKinds are the workload kinds that are training jobs.
var jobKinds = []string{"training", "simai", "chakra", "ring_allreduce"}

func isJob(kind string) bool {
	for _, k := range jobKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// buildJob builds and compiles workload part i, a training job, for a
// fabric of hosts hosts.
func (s *Scenario) buildJob(i int, tp *topo.Topology, seed uint64) (*job.Plan, error) {
	hosts := tp.Hosts
	part := s.Workload[i]
	key := "workload"
	if len(s.Workload) > 1 {
		key = fmt.Sprintf("workload[%d]", i)
	}
	for _, u := range []struct {
		k   string
		set bool
		ok  bool
	}{
		{"ops", part.Ops != nil, part.Kind == "training"},
		{"file", part.File != "", part.Kind == "simai" || part.Kind == "chakra"},
		{"size", part.Size != 0, part.Kind == "ring_allreduce"},
		{"chunks", part.Chunks != 0, true},
		{"hosts", part.Hosts != 0, part.Kind != "simai" && part.Kind != "chakra"},
		{"offset", part.Offset != 0, false},
		{"senders", part.Senders != 0, false},
		{"victim", part.Victim != nil, false},
		{"parallel", part.Parallel != nil, false},
		{"flows", part.Flows != nil, false},
		{"start", part.Start != 0, false},
	} {
		if u.set && !u.ok {
			return nil, s.errorf(key+"."+u.k, "not used with kind %s", part.Kind)
		}
	}
	ranks := part.Hosts
	if ranks == 0 {
		ranks = hosts
	}
	if ranks < 1 {
		return nil, s.errorf(key+".hosts", "%d: want a positive number", part.Hosts)
	}
	var j job.Job
	var err error
	switch part.Kind {
	case "ring_allreduce":
		if part.Size == 0 {
			return nil, s.errorf(key+".size", "required: the bytes of the buffer, like 64MiB")
		}
		j = job.Job{Name: fmt.Sprintf("allreduce-%d", ranks), GPUsPerServer: 1, Ranks: make([][]job.Node, ranks)}
		for r := range j.Ranks {
			j.Ranks[r] = []job.Node{{ID: 1, Op: job.AllReduce, Name: "all_reduce", Bytes: uint64(part.Size)}}
		}
	case "training":
		j, err = s.trainingJob(key, part.Ops, ranks)
	case "simai":
		j, err = s.simaiJob(key, part.File, hosts)
	case "chakra":
		j, err = s.chakraJob(key, part.File)
	}
	if err != nil {
		return nil, err
	}
	if err := s.jobOptions(key, part, &j, seed); err != nil {
		return nil, err
	}
	j.ReadyLatency = tp.OneWay(readyWire)
	plan, err := job.Compile(j, hosts)
	if err != nil {
		return nil, s.errorf(key, "%s", strings.TrimPrefix(err.Error(), "job: "))
	}
	return plan, nil
}

// jobOptions applies the part's job options to j.
func (s *Scenario) jobOptions(key string, part WorkloadPart, j *job.Job, seed uint64) error {
	o := part
	for _, c := range []struct {
		k string
		v int
	}{{"steps", o.Steps}, {"gpus_per_server", o.GPUsPerServer}, {"channels", o.Channels}, {"qps_per_connection", o.QPsPerConnection}, {"chunks", part.Chunks}} {
		if c.v < 0 {
			return s.errorf(key+"."+c.k, "%d: want a positive number", c.v)
		}
	}
	switch job.Placement(o.Placement) {
	case "", job.Packed, job.Random, job.Rail:
	default:
		return s.errorf(key+".placement", "%q: want packed, random or rail", o.Placement)
	}
	if err := s.checkAlgorithm(key+".algorithm", o.Algorithm); err != nil {
		return err
	}
	if o.ScaleUpRate < 0 || o.ScaleUpLatency < 0 {
		return s.errorf(key+".scale_up_rate", "negative scale-up rate or latency")
	}
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	set(&j.Steps, o.Steps)
	set(&j.GPUsPerServer, o.GPUsPerServer)
	set(&j.Channels, o.Channels)
	set(&j.QPsPerConnection, o.QPsPerConnection)
	set(&j.Chunks, part.Chunks)
	j.Placement, j.Seed, j.Algorithm = job.Placement(o.Placement), seed, job.Algorithm(o.Algorithm)
	if o.ScaleUpRate != 0 || o.ScaleUpLatency != 0 {
		j.ScaleUp = job.DefaultScaleUp
		if o.ScaleUpRate != 0 {
			j.ScaleUp.BitsPerSec = int64(o.ScaleUpRate)
		}
		if o.ScaleUpLatency != 0 {
			j.ScaleUp.Latency = o.ScaleUpLatency.D()
		}
	}
	return nil
}

// checkAlgorithm checks a collective algorithm's name ("": the default).
func (s *Scenario) checkAlgorithm(key, alg string) error {
	switch job.Algorithm(alg) {
	case "", job.Ring, job.HalvingDoubling:
		return nil
	}
	return s.errorf(key, "%q: want ring or halving_doubling", alg)
}

var opNames = map[string]job.Op{"compute": job.Compute, "all_reduce": job.AllReduce, "all_gather": job.AllGather,
	"reduce_scatter": job.ReduceScatter, "all_to_all": job.AllToAll}

// trainingJob builds a kind-training job: every rank runs ops in order,
// each after the last one not marked async.
func (s *Scenario) trainingJob(key string, ops []OpSpec, ranks int) (job.Job, error) {
	if len(ops) == 0 {
		return job.Job{}, s.errorf(key+".ops", "required with kind training: a list of {op: compute, duration: …} and {op: all_reduce, size: …}")
	}
	j := job.Job{Name: "training", Ranks: make([][]job.Node, ranks)}
	for k, o := range ops {
		ok := fmt.Sprintf("%s.ops[%d]", key, k)
		op, known := opNames[o.Op]
		switch {
		case !known:
			return j, s.errorf(ok+".op", "%q: want compute, all_reduce, all_gather, reduce_scatter or all_to_all", o.Op)
		case op == job.Compute && (o.Size != 0 || o.GroupSize != 0 || o.Strided):
			return j, s.errorf(ok, "compute takes a duration, not a size or group")
		case op == job.Compute && o.Duration <= 0:
			return j, s.errorf(ok+".duration", "required: how long the compute phase takes, like 2ms")
		case op == job.Compute && o.Algorithm != "":
			return j, s.errorf(ok+".algorithm", "compute has no algorithm")
		case op != job.Compute && o.Duration != 0:
			return j, s.errorf(ok+".duration", "not used with %s (its time is what the run measures)", o.Op)
		case op != job.Compute && o.Size == 0:
			return j, s.errorf(ok+".size", "required: the collective's bytes, like 64MiB")
		case o.GroupSize < 0 || (o.GroupSize > 0 && ranks%o.GroupSize != 0):
			return j, s.errorf(ok+".group_size", "%d does not divide the %d ranks", o.GroupSize, ranks)
		}
		if err := s.checkAlgorithm(ok+".algorithm", o.Algorithm); err != nil {
			return j, err
		}
	}
	for r := range ranks {
		last := 0
		for k, o := range ops {
			op := opNames[o.Op]
			n := job.Node{ID: k + 1, Op: op, Name: o.Name, Bytes: uint64(o.Size), Duration: mtime.PicosOf(o.Duration.D()), Algorithm: job.Algorithm(o.Algorithm)}
			if n.Name == "" {
				n.Name = fmt.Sprintf("%s#%d", o.Op, k)
			}
			if last != 0 {
				n.Deps = []int{last}
			}
			if op != job.Compute && o.GroupSize > 0 {
				n.Group = opGroup(r, ranks, o.GroupSize, o.Strided)
			}
			if !o.Async {
				last = n.ID
			}
			j.Ranks[r] = append(j.Ranks[r], n)
		}
	}
	return j, nil
}

// opGroup is rank r's group of size size among ranks ranks.
func opGroup(r, ranks, size int, strided bool) []int {
	g := make([]int, size)
	for i := range g {
		if strided {
			stride := ranks / size
			g[i] = r%stride + i*stride
		} else {
			g[i] = r/size*size + i
		}
	}
	return g
}

// simaiJob reads a SimAI workload file into a job.
func (s *Scenario) simaiJob(key, file string, hosts int) (job.Job, error) {
	if file == "" {
		return job.Job{}, s.errorf(key+".file", "required with kind simai: a SimAI workload .txt file")
	}
	f, name, err := s.open(file)
	if err != nil {
		return job.Job{}, s.errorf(key+".file", "%s", openError(err))
	}
	defer f.Close()
	w, err := simai.Read(name, f.(io.Reader))
	if err != nil {
		return job.Job{}, simaiError(err)
	}
	ranks := w.Ranks(hosts)
	if ranks > hosts {
		return job.Job{}, &Error{File: name, Msg: fmt.Sprintf("all_gpus %d, but the fabric has %d hosts", ranks, hosts)}
	}
	j, err := w.Job(ranks)
	if err != nil {
		return job.Job{}, simaiError(err)
	}
	return j, nil
}

// chakraJob reads a series of Chakra traces (one .et file per rank) into
// a job: file is their prefix or their directory, relative to the
// scenario, or one of the samples bundled as chakra/….
func (s *Scenario) chakraJob(key, file string) (job.Job, error) {
	if file == "" {
		return job.Job{}, s.errorf(key+".file", "required with kind chakra: a trace prefix or directory (NAME.0.et, NAME.1.et, …)")
	}
	var j *job.Job
	var err error
	switch p := s.path(file); {
	case s.src.fsys != nil && !filepath.IsAbs(file):
		j, err = chakra.LoadJobFS(s.src.fsys, p, file)
	case isBundled(file) && !onDisk(p):
		j, err = chakra.LoadJobFS(presetFS, path.Join("presets", file), file)
	default:
		j, err = chakra.LoadJob(p)
	}
	if err != nil {
		return job.Job{}, &Error{Msg: err.Error()}
	}
	return *j, nil
}

// onDisk reports whether p exists on the file system.
func onDisk(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func simaiError(err error) error {
	var se *simai.Error
	if errors.As(err, &se) {
		return &Error{File: se.File, Line: se.Line, Msg: se.Msg}
	}
	return err
}

// FromWorkload makes a scenario of a SimAI workload file or a series of
// Chakra traces (isChakra) at path: one iteration on a two-tier Clos of
// planes planes with one host per GPU (SimAI's all_gpus, or one per trace),
// T0s of at most 32 hosts, full bisection; gpusPerServer (0: the default,
// 8) GPUs per server share its scale-up domain.
func FromWorkload(path string, planes, gpusPerServer int) (*Scenario, error) {
	s := &Scenario{
		Name:     strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)),
		Workload: WorkloadParts{{Kind: "simai", File: path, GPUsPerServer: gpusPerServer}},
		src:      source{file: "--workload"},
	}
	var gpus int
	if isChakra(path) {
		s.Workload[0].Kind = "chakra"
		j, err := s.chakraJob("--workload", path)
		if err != nil {
			return nil, err
		}
		gpus = len(j.Ranks)
	} else {
		f, name, err := s.open(path)
		if err != nil {
			return nil, &Error{Msg: openError(err)}
		}
		defer f.Close()
		w, err := simai.Read(name, f.(io.Reader))
		if err != nil {
			return nil, simaiError(err)
		}
		if w.GPUs < 2 {
			return nil, &Error{File: name, Msg: "the header gives no all_gpus: write a scenario with kind simai and a topology"}
		}
		gpus = w.GPUs
	}
	down := 1
	for d := min(32, gpus/2); d >= 1; d-- {
		if gpus%d == 0 {
			down = d
			break
		}
	}
	s.Topology = Topology{Kind: "clos2", Hosts: gpus, Planes: planes, T0Down: down, T0Up: down}
	s.Duration = Duration(time.Minute)
	return s, nil
}

// isChakra reports whether a --workload names Chakra traces rather than a
// SimAI file: a .et file, a directory (of .et files), a prefix whose
// rank 0 file exists, or a bundled chakra/ sample.
func isChakra(p string) bool {
	if strings.HasSuffix(p, ".et") || strings.HasPrefix(p, "chakra/") {
		return true
	}
	if st, err := os.Stat(p); err == nil {
		return st.IsDir()
	}
	return onDisk(p + ".0.et")
}
