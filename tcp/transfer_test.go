package tcp

import (
	"testing"
	"time"

	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/vswitch"
)

// flow is one connection carrying messages from a sender to a receiver.
type flow struct {
	snd, rcv         *Conn
	posted, done     uint64 // bytes posted, bytes whose write completed
	received         uint64 // bytes of messages completed at the receiver
	writes, recvImms int
}

// startFlow connects host a to host b and posts messages of the given
// sizes, with a receive for each.
func startFlow(d *network, a, b int, sizes ...uint64) *flow {
	f := &flow{}
	f.snd, f.rcv = d.connect(a, b)
	for i, n := range sizes {
		if err := f.rcv.PostRecv(uint64(i)); err != nil {
			d.T.Fatal(err)
		}
		if err := f.snd.PostWrite(d.Now, verbs.WriteRequest{ID: uint64(i), Length: n}); err != nil {
			d.T.Fatal(err)
		}
		f.posted += n
	}
	d.Kick(a)
	return f
}

// track counts flows' completions from the network's events.
func track(d *network, fs ...*flow) {
	d.OnEvent = func(h int, e verbs.Event) {
		for _, f := range fs {
			switch {
			case e.Kind == verbs.EventWriteDone && f.snd.ep == d.eps[h] && e.QPN == f.snd.QPN():
				f.done += e.Bytes
				f.writes++
			case e.Kind == verbs.EventRecvImm && f.rcv.ep == d.eps[h] && e.QPN == f.rcv.QPN():
				f.received += e.Bytes
				f.recvImms++
			}
		}
	}
}

func (f *flow) finished() bool { return f.done == f.posted && f.received == f.posted }

// TestTransferCompletes: messages of odd sizes arrive whole and in order,
// are completed at both ends, and every byte is delivered once, with and
// without losses (a switch buffer far below the window), for both
// variants.
func TestTransferCompletes(t *testing.T) {
	sizes := []uint64{1, 4095, 4096, 4097, 1 << 20, 3, 5 << 20}
	var total uint64
	for _, n := range sizes {
		total += n
	}
	for _, v := range []Variant{NewReno, DCTCP} {
		for _, buffer := range []int{4 << 20, 24 << 10} {
			d := newDumbbell(t, 3, 10e9, 5*time.Microsecond, Config{Variant: v, MinRTO: time.Millisecond},
				vswitch.QueueConfig{Buffer: buffer, ECNK: 30 << 10})
			f0 := startFlow(d, 0, 2, sizes...)
			f1 := startFlow(d, 1, 2, sizes...)
			track(d, f0, f1)
			if !d.Run(2*time.Second, func() bool { return f0.finished() && f1.finished() }) {
				t.Fatalf("%v buffer %d: not done at %v: %+v %+v", v, buffer, d.Now, *f0, *f1)
			}
			for _, f := range []*flow{f0, f1} {
				st := f.snd.Stats()
				rs := f.rcv.Stats()
				if f.writes != len(sizes) || f.recvImms != len(sizes) || rs.PayloadReceived != total || st.PayloadSent != total {
					t.Errorf("%v buffer %d: %d writes %d receives, %d bytes received, %d sent, want %d each",
						v, buffer, f.writes, f.recvImms, rs.PayloadReceived, st.PayloadSent, total)
				}
			}
			drops := d.Sw.Counters.Drops[vswitch.DropQueueFull]
			rtx := f0.snd.Stats().Retransmits + f1.snd.Stats().Retransmits
			t.Logf("%v buffer %d: %v, %d drops, %d retransmits, %d fast recoveries, %d RTOs", v, buffer, d.Now, drops, rtx,
				f0.snd.Stats().FastRecoveries+f1.snd.Stats().FastRecoveries, f0.snd.Stats().RetryTimeouts+f1.snd.Stats().RetryTimeouts)
			if buffer < 1<<20 && (drops == 0 || rtx == 0) {
				t.Errorf("%v: a %d-byte buffer dropped %d and caused %d retransmits: the test does not test recovery", v, buffer, drops, rtx)
			}
		}
	}
}

func writeOf(id, n uint64) verbs.WriteRequest { return verbs.WriteRequest{ID: id, Length: n} }
