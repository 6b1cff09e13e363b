package roce

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openmrc/mrc/internal/psn"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
)

// drain runs the network until nothing is left in flight.
func (n *tnet) drain() { n.run(time.Hour, func() bool { return false }) }

// TestGoBackNSingleLoss drops one data packet of a long stream and checks
// the go-back-N arithmetic exactly: every packet the requester sent after
// the lost one before the NAK reached it is dropped out of sequence at the
// responder (with a single NAK) and resent, and nothing else is.
func TestGoBackNSingleLoss(t *testing.T) {
	const start, k = 0xFFFF00, 100 // the lost PSN is 0xFFFF64; PSNs wrap at 2^24 during the stream
	lost := psn.PSN(start).Add(k)
	dropped := false
	x := newTransfer(t, tnetConfig{Seed: 11, Drop: func(p *Packet) bool {
		if p.Opcode().IsData() && psn.PSN(p.BTH.PSN) == lost && !dropped {
			dropped = true
			return true
		}
		return false
	}}, ConnectAttr{}, 1<<20)
	var highest psn.PSN = start // highest data PSN A has sent
	var atNAK psn.PSN           // ... when the NAK reached it
	naks := 0
	x.net.Tap = func(_ mtime.Time, from int, tx verbs.Transmit, pkt []byte) {
		var p Packet
		p.Decode(pkt)
		if from == 0 && tx.Kind == KindData {
			highest = psn.PSN(p.BTH.PSN)
		}
	}
	x.net.Deliver = func(_ mtime.Time, to int, pkt []byte) {
		var p Packet
		p.Decode(pkt)
		if to == 0 && p.Opcode() == OpAck && p.AETH.Syndrome>>5 == synKindNAK {
			naks++
			atNAK = highest
			if psn.PSN(p.BTH.PSN) != lost || p.AETH.Syndrome != 0x60 {
				t.Fatalf("NAK of %#x syndrome %#x, want %#x 0x60", p.BTH.PSN, p.AETH.Syndrome, lost)
			}
		}
	}
	x.postAll(11, 4)
	if !x.net.run(time.Second, x.finished) {
		t.Fatalf("unfinished: %v", x)
	}
	x.net.drain()
	x.check()
	sa, sb := x.qa.Stats(), x.qb.Stats()
	ahead := uint64(atNAK.Sub(lost)) // sent after the lost one, before the NAK arrived
	t.Logf("lost PSN %#x; %d packets behind it when the NAK arrived; %v", uint32(lost), ahead, x)
	switch {
	case !dropped || naks != 1 || sb.SeqNAKsSent != 1 || sa.GoBacks != 1:
		t.Fatalf("dropped %v, %d NAKs delivered, %d sent, %d go-backs", dropped, naks, sb.SeqNAKsSent, sa.GoBacks)
	case ahead < 5:
		t.Fatalf("only %d packets in flight behind the loss: the test needs a full pipe", ahead)
	case sb.OutOfSequence != ahead:
		t.Fatalf("%d dropped out of sequence, want %d", sb.OutOfSequence, ahead)
	case sa.Retransmits != ahead+1 || sa.GoBackPSNs != ahead+1:
		t.Fatalf("%d retransmissions, %d PSNs rewound, want %d", sa.Retransmits, sa.GoBackPSNs, ahead+1)
	case sa.RetryTimeouts != 0 || sb.Duplicates != 0:
		t.Fatalf("%d timeouts, %d duplicates", sa.RetryTimeouts, sb.Duplicates)
	}
}

// TestGoBackNRandomLoss drops packets (data, ACKs and NAKs alike) at
// random and checks that go-back-N delivers every byte in order and that
// the retransmissions add up: every data transmission was accepted once,
// lost, dropped out of sequence or a duplicate, so retransmissions cover
// at least every loss and every out-of-sequence drop, and never exceed
// the PSNs go-back-N rewound over.
func TestGoBackNRandomLoss(t *testing.T) {
	for _, loss := range []float64{0.001, 0.01, 0.05} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("loss=%g/seed=%d", loss, seed), func(t *testing.T) {
				x := newTransfer(t, tnetConfig{Seed: seed, Loss: loss}, ConnectAttr{TimeoutExp: 4}, 2<<20)
				x.postAll(seed, 3)
				if !x.net.run(10*time.Second, x.finished) {
					t.Fatalf("unfinished: %v", x)
				}
				x.net.drain()
				x.check()
				sa, sb := x.qa.Stats(), x.qb.Stats()
				accounted := x.net.LostData + sb.OutOfSequence + sb.Duplicates
				t.Logf("%v; %d PSNs rewound; %.1f µs", x, sa.GoBackPSNs, float64(x.net.now)/1e3)
				switch {
				case sa.DataSent != sb.DataReceived:
					t.Fatalf("%d PSNs sent, %d accepted", sa.DataSent, sb.DataReceived)
				case sa.Retransmits != accounted:
					t.Fatalf("%d retransmissions, but %d data packets lost + %d out of sequence + %d duplicates = %d",
						sa.Retransmits, x.net.LostData, sb.OutOfSequence, sb.Duplicates, accounted)
				case sa.Retransmits < x.net.LostData+sb.OutOfSequence:
					t.Fatal("fewer retransmissions than losses and out-of-sequence drops")
				case sa.Retransmits > sa.GoBackPSNs:
					t.Fatalf("%d retransmissions exceed the %d PSNs rewound", sa.Retransmits, sa.GoBackPSNs)
				case x.net.LostData > 0 && (sa.GoBacks == 0 || sb.OutOfSequence == 0):
					t.Fatal("losses without go-back-N")
				case sb.SeqNAKsSent > sb.OutOfSequence:
					t.Fatalf("%d sequence NAKs for %d out-of-sequence packets: more than one per gap", sb.SeqNAKsSent, sb.OutOfSequence)
				}
			})
		}
	}
}

// TestRetryExhausted kills the path mid-transfer: the requester times out
// RetryCount+1 times, one local ACK timeout apart, then fails the QP with
// mrc.ErrNoPath and flushes what is left.
func TestRetryExhausted(t *testing.T) {
	const retries = 3
	x := newTransfer(t, tnetConfig{Seed: 6}, ConnectAttr{TimeoutExp: 4, RetryCount: retries}, 1<<20)
	to := timeoutOf(4) // 65.536 µs
	var lastHeard mtime.Time
	x.net.Deliver = func(now mtime.Time, to int, _ []byte) {
		if to == 0 {
			lastHeard = now
		}
	}
	x.postAll(6, 0)
	x.net.run(20*time.Microsecond, func() bool { return false })
	x.net.cfg.Dead = true
	killed := x.net.now
	x.net.run(time.Second, func() bool { return len(x.errs) > 0 })
	x.net.drain()
	if len(x.errs) == 0 {
		t.Fatalf("no error: %v", x)
	}
	qe := x.errs[0]
	if qe.Kind != verbs.EventQPError || !errors.Is(qe.Err, verbs.ErrNoPath) || x.qa.State() != verbs.StateError {
		t.Fatalf("first event %v, state %v", qe, x.qa.State())
	}
	if want := lastHeard.Add((retries + 1) * to); qe.Time != want {
		t.Fatalf("failed at %v, want last progress %v + %d × %v = %v (path killed at %v)",
			qe.Time, lastHeard, retries+1, to, want, killed)
	}
	sa := x.qa.Stats()
	if sa.RetryTimeouts != retries+1 || sa.GoBacks != retries {
		t.Fatalf("%d timeouts, %d go-backs", sa.RetryTimeouts, sa.GoBacks)
	}
	flushed := 0
	for _, ev := range x.errs[1:] {
		if ev.Kind != verbs.EventWriteDone || !errors.Is(ev.Err, verbs.ErrFlushed) {
			t.Fatalf("event %v", ev)
		}
		flushed++
	}
	if flushed == 0 || flushed+len(x.done) != x.posted {
		t.Fatalf("%d flushed + %d done of %d posted", flushed, len(x.done), x.posted)
	}
	if next := x.net.eps[0].NextTimeout(); next != mtime.Never {
		t.Fatalf("a failed QP keeps a timer at %v", next)
	}
}

// TestRetryCountsPerPSN drops every transmission of one PSN: sequence-error
// NAKs and timeouts without progress both spend the retry count, and the
// QP fails after RetryCount+1 tries.
func TestRetryCountsPerPSN(t *testing.T) {
	const retries = 5
	bad := psn.PSN(0xFFFF00).Add(40)
	tries := 0
	x := newTransfer(t, tnetConfig{Seed: 8, Drop: func(p *Packet) bool {
		if p.Opcode().IsData() && psn.PSN(p.BTH.PSN) == bad {
			tries++
			return true
		}
		return false
	}}, ConnectAttr{TimeoutExp: 4, RetryCount: retries}, 1<<20)
	x.postAll(8, 0)
	x.net.run(time.Second, func() bool { return len(x.errs) > 0 })
	if len(x.errs) == 0 || !errors.Is(x.errs[0].Err, verbs.ErrNoPath) {
		t.Fatalf("events %v", x.errs)
	}
	sa := x.qa.Stats()
	if tries != retries+1 || sa.SeqNAKsReceived == 0 || sa.RetryTimeouts == 0 {
		t.Fatalf("%d tries of the PSN, %d NAKs, %d timeouts", tries, sa.SeqNAKsReceived, sa.RetryTimeouts)
	}
	if got := x.qb.Stats().DataReceived; got != uint64(bad.Sub(0xFFFF00)) {
		t.Fatalf("responder accepted %d packets, want the %d before the bad PSN", got, bad.Sub(0xFFFF00))
	}
}

// TestLostFinalAck drops the ACKs that cover the whole transfer: the
// requester times out once, resends its tail, and the responder, which
// has it all already, must acknowledge the duplicates.
func TestLostFinalAck(t *testing.T) {
	var x *transfer
	droppedAt := mtime.Time(-1)
	x = newTransfer(t, tnetConfig{Seed: 12, Drop: func(p *Packet) bool {
		sa, sb := x.qa.Stats(), x.qb.Stats()
		if p.Opcode() != OpAck || sb.PayloadReceived != uint64(len(x.src)) || sa.PayloadSent != uint64(len(x.src)) {
			return false
		}
		if droppedAt < 0 {
			droppedAt = x.net.now
		}
		return x.net.now < droppedAt.Add(10*time.Microsecond) // every ACK sent once B has it all
	}}, ConnectAttr{TimeoutExp: 4}, 1<<18)
	x.postAll(12, 2)
	if !x.net.run(time.Second, x.finished) {
		t.Fatalf("unfinished: %v", x)
	}
	end := x.net.now
	x.net.drain()
	x.check()
	sa, sb := x.qa.Stats(), x.qb.Stats()
	if droppedAt < 0 || sa.RetryTimeouts != 1 || sb.Duplicates == 0 || sa.Retransmits != sb.Duplicates {
		t.Fatalf("dropped at %v; %d timeouts, %d retransmissions, %d duplicates", droppedAt, sa.RetryTimeouts, sa.Retransmits, sb.Duplicates)
	}
	if el := end.Sub(droppedAt); el < timeoutOf(4)-10*time.Microsecond || el > timeoutOf(4)+20*time.Microsecond {
		t.Fatalf("finished %v after the lost ACK, want about one timeout (%v)", el, timeoutOf(4))
	}
}
