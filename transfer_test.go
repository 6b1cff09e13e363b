package mrc_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

// transfer is one scenario: side A WRITEs msgs messages of random sizes into
// B's memory, the last one or some with immediates, through net.
type transfer struct {
	t       testing.TB
	net     *testnet.Net
	qa, qb  *mrc.QP
	src     []byte
	dst     []byte
	dstMR   verbs.MR
	srcMR   verbs.MR       // set by postAll
	done    map[uint64]int // completions per WR ID at A
	imms    map[uint32]int // immediates delivered at B
	errs    []verbs.Event
	posted  int
	wantImm int
}

func newTransfer(t testing.TB, cfg testnet.Config, ev mrc.EVProfile, rts mrc.RTSAttr, size int) *transfer {
	t.Helper()
	n, err := testnet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	qa, qb, err := n.Connect(ev, rts)
	if err != nil {
		t.Fatal(err)
	}
	return newTransferOn(t, n, qa, qb, cfg.Seed, size)
}

// newTransferOn prepares size random bytes (from seed) to move from qa to
// qb, two connected QPs of n, and collects n's events.
func newTransferOn(t testing.TB, n *testnet.Net, qa, qb *mrc.QP, seed uint64, size int) *transfer {
	t.Helper()
	x := &transfer{t: t, net: n, qa: qa, qb: qb, done: map[uint64]int{}, imms: map[uint32]int{}}
	r := rand.New(rand.NewPCG(seed, 77))
	x.src = make([]byte, size)
	for i := range x.src {
		x.src[i] = byte(r.Uint32())
	}
	// The destination region sits inside a larger buffer whose guard
	// bytes must never change.
	x.dst = make([]byte, size+2*guard)
	for i := range x.dst {
		x.dst[i] = 0xA5
	}
	var err error
	if x.dstMR, err = n.Endpoint(testnet.B).RegisterMemory(x.dst[guard:guard+size], verbs.AccessRemoteWrite); err != nil {
		t.Fatal(err)
	}
	n.OnEvent = func(s testnet.Side, ev verbs.Event) {
		switch {
		case ev.Kind == verbs.EventWriteDone && ev.Err == nil:
			x.done[ev.WRID]++
		case ev.Kind == verbs.EventRecvImm:
			x.imms[ev.Imm]++
		case ev.Kind == verbs.EventQPError || ev.Err != nil:
			x.errs = append(x.errs, ev)
		}
	}
	return x
}

const guard = 64

// postAll splits src into msgs WRITEs (every third with an immediate).
func (x *transfer) postAll(msgs int) {
	x.t.Helper()
	epA := x.net.Endpoint(testnet.A)
	srcMR, err := epA.RegisterMemory(x.src, verbs.AccessLocal)
	if err != nil {
		x.t.Fatal(err)
	}
	x.srcMR = srcMR
	chunk := (len(x.src) + msgs - 1) / msgs
	for i, off := 0, 0; off < len(x.src); i, off = i+1, off+chunk {
		n := min(chunk, len(x.src)-off)
		imm := i%3 == 2 || off+n == len(x.src)
		if imm {
			if err := x.qb.PostRecv(uint64(i)); err != nil {
				x.t.Fatal(err)
			}
			x.wantImm++
		}
		err := x.qa.PostWrite(x.net.Now(), verbs.WriteRequest{
			ID: uint64(i), Local: srcMR, LocalOffset: uint64(off),
			Remote: x.dstMR, RemoteOffset: uint64(off), Length: uint64(n),
			WithImm: imm, Imm: uint32(0x1000 + i),
		})
		if err != nil {
			x.t.Fatal(err)
		}
		x.posted++
	}
	x.net.Kick(testnet.A)
}

// debugHook, when set, is consulted at every step; true stops the run.
var debugHook func(*transfer) bool

func (x *transfer) finished() bool {
	if debugHook != nil && debugHook(x) {
		return true
	}
	return len(x.done) == x.posted && len(x.imms) == x.wantImm || len(x.errs) > 0
}

// check verifies the outcome: memory byte-exact, guards intact, every
// completion exactly once.
func (x *transfer) check() {
	x.t.Helper()
	if len(x.errs) > 0 {
		x.t.Fatalf("errors: %v", x.errs)
	}
	if len(x.done) != x.posted {
		x.t.Fatalf("%d of %d WRITEs completed (now %v, A stats %+v)", len(x.done), x.posted, x.net.Now(), x.qa.Stats())
	}
	for id, c := range x.done {
		if c != 1 {
			x.t.Fatalf("WRITE %d completed %d times", id, c)
		}
	}
	if len(x.imms) != x.wantImm {
		x.t.Fatalf("%d of %d immediates delivered", len(x.imms), x.wantImm)
	}
	for imm, c := range x.imms {
		if c != 1 {
			x.t.Fatalf("immediate %#x delivered %d times", imm, c)
		}
	}
	size := len(x.src)
	if !bytes.Equal(x.dst[guard:guard+size], x.src) {
		for i := range x.src {
			if x.dst[guard+i] != x.src[i] {
				x.t.Fatalf("remote memory differs first at byte %d of %d", i, size)
			}
		}
	}
	for i := range guard {
		if x.dst[i] != 0xA5 || x.dst[guard+size+i] != 0xA5 {
			x.t.Fatalf("write outside the memory region")
		}
	}
}

func TestTransferClean(t *testing.T) {
	x := newTransfer(t, testnet.Config{Seed: 1, Planes: 4}, mrc.EVProfile{}, mrc.RTSAttr{}, 1<<20)
	x.postAll(7)
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatalf("transfer did not finish by %v", x.net.Now())
	}
	x.check()
	s := x.qa.Stats()
	if s.Retransmits != 0 || s.LossTimeouts != 0 {
		t.Fatalf("clean network, yet %d retransmits and %d loss timeouts", s.Retransmits, s.LossTimeouts)
	}
	t.Logf("1 MiB in %v; A: %+v", x.net.Now(), s)
}
