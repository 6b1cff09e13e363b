package job

import (
	"strings"
	"testing"
)

func oneCollective(ranks int, op Op, alg, jobAlg Algorithm) Job {
	j := Job{Ranks: make([][]Node, ranks), Algorithm: jobAlg}
	for r := range j.Ranks {
		j.Ranks[r] = []Node{{ID: 1, Op: op, Bytes: 1 << 20, Algorithm: alg}}
	}
	return j
}

// A collective's algorithm is checked: halving-doubling needs a
// power-of-two group and is not an all-to-all's; unknown names are
// refused, naming the rank and node.
func TestCompileAlgorithmErrors(t *testing.T) {
	for _, c := range []struct {
		j    Job
		want string
	}{
		{oneCollective(6, AllReduce, HalvingDoubling, ""), "rank 0 node 1 (all_reduce): halving_doubling needs a power-of-two group, not 6 ranks"},
		{oneCollective(6, AllGather, "", HalvingDoubling), "halving_doubling needs a power-of-two group, not 6 ranks"},
		{oneCollective(4, AllToAll, HalvingDoubling, ""), "halving_doubling is for all_reduce, all_gather and reduce_scatter"},
		{oneCollective(4, AllReduce, "tree", ""), `unknown algorithm "tree"`},
		{oneCollective(4, AllReduce, "", "tree"), `job: unknown algorithm "tree"`},
	} {
		_, err := Compile(c.j, 8)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	// Job-wide halving-doubling leaves an all-to-all as it is, and a
	// power-of-two group compiles.
	for _, j := range []Job{oneCollective(6, AllToAll, "", HalvingDoubling), oneCollective(8, AllReduce, HalvingDoubling, "")} {
		if _, err := Compile(j, 8); err != nil {
			t.Error(err)
		}
	}
}
