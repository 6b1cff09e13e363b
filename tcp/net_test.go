package tcp

import (
	"container/heap"
	"net/netip"
	"testing"
	"time"

	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/vswitch"
)

// dumbbell is a test network: hosts 0..n-1, each on its own port of one
// vswitch (port h faces host h) by a link of rate bits/s and delay each
// way. The switch's queues are real vswitch queues, so ECN marking, tail
// drops and queue occupancy are the switch's own. Events run in virtual
// time, in order; ties break by insertion.
type dumbbell struct {
	t     testing.TB
	now   mtime.Time
	rate  int64
	delay time.Duration
	eps   []*Endpoint
	sw    *vswitch.Switch
	host  []vswitch.Transmitter // host egress
	port  []vswitch.Transmitter // switch egress
	busy  []bool                // switch port serialising
	pkts  map[vswitch.Handle][]byte
	wls   map[vswitch.Handle]int
	nextH vswitch.Handle
	evs   evHeap
	seq   uint64
	timer []mtime.Time // per host: the wake-up scheduled

	// Queue statistics of port watch, integrated from warm on.
	watch, warm  int
	qArea        float64 // byte·ns
	qFrom, qLast mtime.Time
	qMax         int
	events       int
	onEvent      func(h int, ev verbs.Event)
	// drop, when set, is asked about every packet reaching the switch
	// and loses those it returns true for.
	drop func(pkt []byte) bool
}

type evKind uint8

const (
	evHostTx evKind = iota // host h's port is free
	evAtSw                 // packet arrives at the switch from host h
	evPortTx               // switch port h is free
	evAtHost               // packet arrives at host h
	evTimer                // host h's timer
)

type ev struct {
	at   mtime.Time
	seq  uint64
	kind evKind
	h    int
	pkt  []byte
	wl   int
}

type evHeap []ev

func (e evHeap) Len() int { return len(e) }
func (e evHeap) Less(i, j int) bool {
	return e[i].at < e[j].at || e[i].at == e[j].at && e[i].seq < e[j].seq
}
func (e evHeap) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *evHeap) Push(x any)   { *e = append(*e, x.(ev)) }
func (e *evHeap) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

func addr(h int) netip.Addr {
	return netip.AddrFrom16([16]byte{0xfd, 0, 14: byte(h >> 8), 15: byte(h)})
}

// newDumbbell builds n hosts with cfg (Ports is set per host) and a switch
// whose every port has queue q.
func newDumbbell(t testing.TB, n int, rate int64, delay time.Duration, cfg Config, q vswitch.QueueConfig) *dumbbell {
	t.Helper()
	sw, err := vswitch.New(vswitch.Config{Ports: n, Mode: vswitch.ModeECMP, Queue: q, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := &dumbbell{t: t, rate: rate, delay: delay, sw: sw, pkts: map[vswitch.Handle][]byte{}, wls: map[vswitch.Handle]int{},
		host: make([]vswitch.Transmitter, n), port: make([]vswitch.Transmitter, n), busy: make([]bool, n),
		timer: make([]mtime.Time, n), watch: -1}
	for h := range n {
		c := cfg
		c.Ports = []netip.Addr{addr(h)}
		c.Seed = uint64(h)
		ep, err := NewEndpoint(c)
		if err != nil {
			t.Fatal(err)
		}
		d.eps = append(d.eps, ep)
		a := addr(h).As16()
		if err := sw.AddRoute(a, 128, h); err != nil {
			t.Fatal(err)
		}
		d.host[h].BitsPerSec, d.port[h].BitsPerSec = rate, rate
		d.timer[h] = mtime.Never
	}
	return d
}

// connect opens a connection from host a to host b and returns both ends.
func (d *dumbbell) connect(a, b int) (*Conn, *Conn) {
	d.t.Helper()
	ca, err := d.eps[a].CreateConn()
	if err != nil {
		d.t.Fatal(err)
	}
	cb, err := d.eps[b].CreateConn()
	if err != nil {
		d.t.Fatal(err)
	}
	if err := ca.Connect(d.now, ConnectAttr{Remote: addr(b), RemoteQPN: cb.QPN(), SendISN: 0xfffff000}); err != nil {
		d.t.Fatal(err)
	}
	if err := cb.Connect(d.now, ConnectAttr{Remote: addr(a), RemoteQPN: ca.QPN(), RecvISN: 0xfffff000}); err != nil {
		d.t.Fatal(err)
	}
	return ca, cb
}

func (d *dumbbell) push(e ev) {
	d.seq++
	e.seq = d.seq
	heap.Push(&d.evs, e)
}

// kick makes host h look for something to send now.
func (d *dumbbell) kick(h int) { d.after(h) }

func (d *dumbbell) ps(t mtime.Time) mtime.Picos { return t.Picos() }

// transmit sends what host h has for its free port.
func (d *dumbbell) transmit(h int) {
	if !d.host[h].Free(d.ps(d.now)) {
		return
	}
	buf := make([]byte, IPv6HeaderRoom)
	tx, ok := d.eps[h].PollTransmit(d.now, 1, buf)
	if !ok {
		return
	}
	done := ceilNanos(d.host[h].Start(d.ps(d.now), tx.WireLen))
	d.push(ev{at: done, kind: evHostTx, h: h})
	d.push(ev{at: done.Add(d.delay), kind: evAtSw, h: h, pkt: buf[:tx.Len], wl: tx.WireLen})
}

// ceilNanos rounds p up to whole nanoseconds, so that a port is free at
// the event that says so.
func ceilNanos(p mtime.Picos) mtime.Time { return (p + mtime.PicosPerNano - 1).Nanos() }

// after hands out host h's events, sends and arms its timer.
func (d *dumbbell) after(h int) {
	ep := d.eps[h]
	for e, ok := ep.PollEvent(); ok; e, ok = ep.PollEvent() {
		if d.onEvent != nil {
			d.onEvent(h, e)
		}
	}
	d.transmit(h)
	if nt := ep.NextTimeout(); nt != mtime.Never && nt < d.timer[h] {
		d.timer[h] = nt
		d.push(ev{at: nt, kind: evTimer, h: h})
	}
}

// serve starts switch port p's next packet if it is idle.
func (d *dumbbell) serve(p int) {
	if d.busy[p] {
		return
	}
	d.account(p)
	dq, ok := d.sw.Dequeue(d.ps(d.now), p)
	if !ok {
		return
	}
	d.busy[p] = true
	pkt := d.pkts[dq.Handle]
	delete(d.pkts, dq.Handle)
	done := ceilNanos(d.port[p].Start(d.ps(d.now), dq.WireLen))
	d.push(ev{at: done, kind: evPortTx, h: p})
	d.push(ev{at: done.Add(d.delay), kind: evAtHost, h: p, pkt: pkt, wl: dq.WireLen})
}

// account integrates the watched port's queue up to now, before it
// changes.
func (d *dumbbell) account(p int) {
	if p != d.watch || d.now < mtime.Time(d.warm) {
		return
	}
	if d.qFrom == 0 {
		d.qFrom, d.qLast = d.now, d.now
	}
	q, _ := d.sw.Queued(p)
	d.qArea += float64(q) * float64(d.now-d.qLast)
	d.qLast = d.now
	d.qMax = max(d.qMax, q)
}

// meanQueue returns the watched port's time-averaged queue in bytes.
func (d *dumbbell) meanQueue() float64 {
	d.account(d.watch)
	if d.qLast <= d.qFrom {
		return 0
	}
	return d.qArea / float64(d.qLast-d.qFrom)
}

// step runs the next event; false when there is none.
func (d *dumbbell) step() bool {
	if d.evs.Len() == 0 {
		return false
	}
	e := heap.Pop(&d.evs).(ev)
	d.now = e.at
	d.events++
	switch e.kind {
	case evHostTx:
		d.transmit(e.h)
	case evAtSw:
		if d.drop != nil && d.drop(e.pkt) {
			return true
		}
		out, drop := d.sw.Forward(e.pkt, e.h)
		if drop != vswitch.DropNone {
			return true
		}
		d.account(out)
		d.nextH++
		v := d.sw.Enqueue(d.ps(d.now), out, e.h, d.nextH, e.pkt, e.wl)
		if v.Drop == vswitch.DropNone {
			d.pkts[d.nextH] = e.pkt[:v.Len]
			d.serve(out)
		}
	case evPortTx:
		d.busy[e.h] = false
		d.serve(e.h)
	case evAtHost:
		d.eps[e.h].HandleDatagram(d.now, 0, e.pkt, e.wl)
		d.after(e.h)
	case evTimer:
		if d.timer[e.h] != e.at {
			return true
		}
		d.timer[e.h] = mtime.Never
		d.eps[e.h].HandleTimeout(d.now)
		d.after(e.h)
	}
	return true
}

// run steps until virtual time limit or done, and reports whether done.
func (d *dumbbell) run(limit time.Duration, done func() bool) bool {
	for d.now < mtime.Time(limit) {
		if done != nil && done() {
			return true
		}
		if !d.step() {
			return done != nil && done()
		}
	}
	return done != nil && done()
}

// vswitchQueue is a small tail-drop queue: 24 KB, below two windows.
func vswitchQueue() vswitch.QueueConfig { return vswitch.QueueConfig{Buffer: 24 << 10, ECNK: 12 << 10} }
