package mrc_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
)

var seeds = flag.Int("seeds", 300, "random seeds for the property tests (CI's long run uses 10000)")

// TestPropertyHostileNetwork runs many transfers, each through a network
// with random injectors (loss, trims, ECN, duplication, reordering,
// corruption, dead and flapping paths, a dead port) and random QP
// parameters, and checks the invariants every run must keep:
//   - the remote memory is byte-exact and nothing outside it is written;
//   - every completion arrives exactly once;
//   - no QP errors while at least one path lives;
//   - retransmissions stay bounded.
func TestPropertyHostileNetwork(t *testing.T) { forEachSeed(t, runHostile) }

// forEachSeed runs check as a parallel subtest for each of -seeds seeds
// (at most 50 with -short).
func forEachSeed(t *testing.T, check func(t *testing.T, seed uint64)) {
	n := *seeds
	if testing.Short() {
		n = min(n, 50)
	}
	for seed := range uint64(n) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			check(t, seed)
		})
	}
}

func runHostile(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 1234))
	pick := func(p float64, v float64) float64 {
		if r.Float64() < p {
			return v * r.Float64()
		}
		return 0
	}
	cfg := testnet.Config{
		Seed:        seed,
		Planes:      1 + r.IntN(4),
		Jitter:      time.Duration(r.IntN(3)) * time.Microsecond,
		Encap:       mrc.Encap(r.IntN(3)),
		MTU:         []int{1024, 2048, 4096}[r.IntN(3)],
		Loss:        pick(0.5, 0.05),
		Trim:        pick(0.5, 0.1),
		TrimLastHop: pick(0.3, 0.1),
		ECN:         pick(0.5, 0.2),
		Dup:         pick(0.3, 0.05),
		Corrupt:     pick(0.3, 0.02),
	}
	ev := mrc.EVProfile{
		ActivePerPlane: 1 + r.IntN(16),
		BackupPerPlane: r.IntN(8) - 1,
		PathsPerPlane:  8 + r.IntN(64),
		Oblivious:      r.IntN(8) == 0,
	}
	rts := mrc.RTSAttr{MPR: 1 + r.IntN(8), RetryExp: mrc.RetryForever}
	size := 1 + r.IntN(600_000)
	x := newTransfer(t, cfg, ev, rts, size)
	// Fail some paths, flap another, maybe drop a port for a while; the
	// network always keeps at least one live path. Oblivious spraying
	// cannot route around a dead path by design, so it only sees flaps.
	killed := map[testnet.Path]bool{}
	for range r.IntN(4) * btoi(!ev.Oblivious) {
		p := testnet.Path{Plane: r.IntN(cfg.Planes), Index: r.IntN(ev.PathsPerPlane)}
		killed[p] = true
		if !livePath(x.qa, killed) || !livePath(x.qb, killed) {
			delete(killed, p) // would leave a QP no path at all
			continue
		}
		x.net.KillPath(p)
	}
	if r.IntN(3) == 0 {
		x.net.Flap(testnet.Path{Plane: r.IntN(cfg.Planes), Index: r.IntN(ev.PathsPerPlane)}, 50*time.Microsecond, 0.5)
	}
	x.postAll(1 + r.IntN(12))
	portDown := cfg.Planes > 1 && r.IntN(4) == 0
	limit := mtime.Time(2 * time.Second)
	if portDown {
		p := r.IntN(cfg.Planes)
		x.net.RunUntil(mtime.Time(20*time.Microsecond), func() bool { return false })
		x.net.SetPortUp(testnet.A, p, false)
		x.net.RunUntil(mtime.Time(300*time.Microsecond), x.finished)
		x.net.SetPortUp(testnet.A, p, true)
	}
	if !x.net.RunUntil(limit, x.finished) {
		t.Fatalf("cfg %+v ev %+v: transfer of %d bytes unfinished at %v\nA %+v\nB %+v\nnet %+v",
			cfg, ev, size, x.net.Now(), x.qa.Stats(), x.qb.Stats(), x.net.Stats)
	}
	x.check()
	// Retransmissions are bounded: at most a few per packet the network
	// destroyed, plus a floor for timer-driven resends.
	s := x.qa.Stats()
	ns := x.net.Stats
	destroyed := ns.Lost + ns.Trimmed + ns.BlackHoled + ns.Corrupted
	if bound := 4*destroyed + s.DataSent/4 + 64; s.Retransmits > bound {
		t.Fatalf("%d retransmits for %d packets destroyed by the network (bound %d); A %+v", s.Retransmits, destroyed, bound, s)
	}
}

// livePath reports whether one of q's EVs avoids every killed path.
func livePath(q *mrc.QP, killed map[testnet.Path]bool) bool {
	for _, ev := range q.EVs() {
		if !killed[testnet.Path{Plane: ev.Plane(), Index: ev.Path()}] {
			return true
		}
	}
	return false
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
