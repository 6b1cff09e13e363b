package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

// TestPassedByQPsHaveNothingToSend: PollTransmit passes by a QP that it
// found blocked on the same ports before (QP.blockedFree). After every
// packet either side sends, each QP it would pass by is asked on those
// ports and must have nothing for them. Six QP pairs share the ports of
// two endpoints, in both directions, over lossy, trimming, reordering
// planes with a dead path, a flapping one and a port that goes down and
// up, so QPs often wait for one plane while another is free.
func TestPassedByQPsHaveNothingToSend(t *testing.T) {
	const pairs, size = 6, 96 << 10
	checked := 0
	for seed := uint64(1); seed <= 12; seed++ {
		cfg := testnet.Config{Planes: 4, Seed: seed, Jitter: time.Microsecond, Loss: 0.01, Trim: 0.03, ECN: 0.05}
		net, err := testnet.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		net.KillPath(testnet.Path{Plane: 1, Index: 3})
		net.Flap(testnet.Path{Plane: 2, Index: 5}, 20*time.Microsecond, 0.5)
		net.Tap = func(now mtime.Time, _ testnet.Side, _ verbs.Transmit, _ []byte) {
			for s := range 2 {
				n, err := net.Endpoint(testnet.Side(s)).CheckBlockedPolls(now)
				if err != nil {
					t.Fatalf("seed %d, side %d: %v", seed, s, err)
				}
				checked += n
			}
		}
		finished := postExchange(t, net, seed, pairs, size)
		net.SetPortUp(testnet.B, 3, false)
		net.RunUntil(mtime.Time(30*time.Microsecond), func() bool { return false })
		net.SetPortUp(testnet.B, 3, true)
		if !net.RunUntil(mtime.Time(50*time.Millisecond), finished) {
			t.Fatalf("seed %d: transfers unfinished", seed)
		}
	}
	// The check above must have had QPs to ask, or it tested nothing.
	if checked == 0 {
		t.Fatal("no QP was ever passed by: the scenario never blocks one")
	}
	t.Logf("%d QPs asked on ports they were passed by on", checked)
}

// postExchange connects pairs QP pairs through net (made with seed) and
// posts a WRITE of size bytes each way on each. It returns a function that
// reports whether every WRITE has completed; a completion in error fails t.
func postExchange(t *testing.T, net *testnet.Net, seed uint64, pairs, size int) (finished func() bool) {
	t.Helper()
	var qps [2][]*mrc.QP
	for range pairs {
		qa, qb, err := net.Connect(exchangeProfile, mrc.RTSAttr{})
		if err != nil {
			t.Fatal(err)
		}
		qps[testnet.A], qps[testnet.B] = append(qps[testnet.A], qa), append(qps[testnet.B], qb)
	}
	var mrs [2][2]verbs.MR // by side: source, destination
	for s := range 2 {
		src, err := net.Endpoint(testnet.Side(s)).RegisterMemory(make([]byte, size), verbs.AccessLocal)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := net.Endpoint(testnet.Side(s)).RegisterMemory(make([]byte, size), verbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		mrs[s] = [2]verbs.MR{src, dst}
	}
	done := 0
	net.OnEvent = func(s testnet.Side, e verbs.Event) {
		switch {
		case e.Err != nil:
			t.Errorf("seed %d, side %d: %v", seed, s, e)
		case e.Kind == verbs.EventWriteDone:
			done++
		}
	}
	for s := range 2 {
		for i, q := range qps[s] {
			if err := q.PostWrite(0, verbs.WriteRequest{ID: uint64(i), Local: mrs[s][0], Remote: mrs[1-s][1], Length: uint64(size)}); err != nil {
				t.Fatal(err)
			}
		}
		net.Kick(testnet.Side(s))
	}
	return func() bool { return done == 2*pairs }
}
