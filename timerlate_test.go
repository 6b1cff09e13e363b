package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
)

// TestTimersNeverLate: a QP's timer may be armed early (a deadline that
// moved later wakes it for nothing), never late. After every step of
// transfers through lossy, trimming, reordering planes, each QP's armed
// timer is checked against its deadline computed afresh. What moves a
// deadline earlier must say so: a shorter loss timeout from a new RTT
// sample, a loss list whose new head was sent after the latest trim NACK,
// a flight that empties under a pace wait.
func TestTimersNeverLate(t *testing.T) {
	const pairs, size = 4, 256 << 10
	for seed := uint64(1); seed <= 64; seed++ {
		cfg := testnet.Config{Planes: 2, Seed: seed, Jitter: time.Duration(seed%4) * 10 * time.Microsecond,
			Loss: 0.01, Trim: 0.1 * float64(seed%4), TrimLastHop: 0.05 * float64(seed%2), ECN: 0.1}
		net, err := testnet.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		net.KillPath(testnet.Path{Plane: 1, Index: 2})
		finished := postExchange(t, net, seed, pairs, size)
		var late error
		ok := net.RunUntil(mtime.Time(50*time.Millisecond), func() bool {
			for s := range 2 {
				if err := net.Endpoint(testnet.Side(s)).LateTimer(net.Now()); err != nil && late == nil {
					late = err
				}
			}
			return finished() || late != nil
		})
		if late != nil {
			t.Fatalf("seed %d: %v", seed, late)
		}
		if !ok {
			t.Fatalf("seed %d: transfers unfinished", seed)
		}
	}
}
