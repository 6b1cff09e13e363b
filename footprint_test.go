package mrc_test

import (
	"testing"
	"time"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/internal/testkit/testnet"
	"github.com/openmrc/mrc/mtime"
)

// oneFlow moves one 1 MiB WRITE_IMM from A to B, as every host of
// --preset big does, and returns the transfer.
func oneFlow(t *testing.T) *transfer {
	t.Helper()
	x := newTransfer(t, testnet.Config{Seed: 3, Planes: 8}, mrc.EVProfile{}, mrc.RTSAttr{}, 1<<20)
	x.postAll(1)
	if !x.net.RunUntil(mtime.Time(time.Second), x.finished) {
		t.Fatalf("transfer did not finish by %v", x.net.Now())
	}
	x.check()
	return x
}

// TestFootprintImms: a responder that has one WRITE_IMM in progress at a
// time keeps a small table of them, not one slot for every WRITE_IMM the
// requester may have in progress (128 by default).
func TestFootprintImms(t *testing.T) {
	x := oneFlow(t)
	if n := x.qb.ImmSlots(); n == 0 || n > 4 {
		t.Fatalf("the responder keeps %d WRITE_IMM slots for one WRITE_IMM, want 1..4", n)
	}
}

// TestFootprintCC: a QP that only receives builds no congestion
// controller; the one that sends does, and reports its window.
func TestFootprintCC(t *testing.T) {
	x := oneFlow(t)
	if x.qb.HasCC() {
		t.Errorf("the responder, which sent no data, built a congestion controller")
	}
	if !x.qa.HasCC() {
		t.Errorf("the requester has no congestion controller")
	}
	if cwnd, _ := x.qb.Window(); cwnd <= 0 {
		t.Errorf("the responder reports a window of %d bytes", cwnd)
	}
}

// TestFootprintWQEs: a QP that never posts a WRITE keeps no ring of
// them.
func TestFootprintWQEs(t *testing.T) {
	x := oneFlow(t)
	if n := x.qb.WQESlots(); n != 0 {
		t.Errorf("the responder, which posted nothing, keeps %d WQE slots", n)
	}
	if n := x.qa.WQESlots(); n == 0 {
		t.Errorf("the requester keeps no WQE slots")
	}
}
