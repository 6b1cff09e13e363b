package swnet

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/openmrc/mrc/metrics"
)

// Snapshot returns the switch's ports as metrics.Ports (the per-port
// families every MRC host and switch serves).
func (st *Stats) Snapshot(plane int) *metrics.Snapshot {
	snap := &metrics.Snapshot{}
	for _, p := range st.Ports {
		snap.Ports = append(snap.Ports, metrics.Port{
			Node: st.Name, Port: p.Name, Plane: plane,
			TxPackets: p.TxPackets, RxPackets: p.RxPackets, TxBytes: p.TxBytes, RxBytes: p.RxBytes,
			Trims: p.Trimmed, ECNMarks: p.Marked, Drops: p.Dropped,
		})
	}
	return snap
}

// WriteMetrics writes the switch's metrics in the Prometheus text
// exposition format: the per-port families of package metrics, then the
// switch's own (docs/switch.md).
func (st *Stats) WriteMetrics(buf *bytes.Buffer, plane int) error {
	if err := st.Snapshot(plane).Write(buf); err != nil {
		return err
	}
	w := metrics.NewWriter(buf)
	node := metrics.Label{Name: "node", Value: st.Name}
	w.Family("mrc_switch_packets_total", metrics.Counter, "Packets through the switch, by what happened to them.")
	for _, e := range []struct {
		event string
		v     uint64
	}{{"received", st.Received}, {"enqueued", st.Enqueued}, {"sent", st.Sent}, {"trimmed", st.Trimmed},
		{"trimmed_lasthop", st.TrimmedLastHop}, {"ecn_marked", st.Marked}, {"ecn_marked_inner", st.MarkedInner},
		{"ignored", st.Ignored}, {"no_buffer", st.NoBuffer}} {
		w.SampleUint("mrc_switch_packets_total", e.v, node, metrics.Label{Name: "event", Value: e.event})
	}
	w.Family("mrc_switch_drops_total", metrics.Counter, "Packets the switch dropped, by cause.")
	for _, cause := range dropOrder(st.Drops) {
		w.SampleUint("mrc_switch_drops_total", st.Drops[cause], node, metrics.Label{Name: "cause", Value: cause})
	}
	port := func(p PortStats) []metrics.Label {
		return []metrics.Label{node, {Name: "port", Value: p.Name}, {Name: "plane", Value: strconv.Itoa(plane)}}
	}
	w.Family("mrc_switch_port_up", metrics.Gauge, "1 while the port's link has carrier.")
	for _, p := range st.Ports {
		v := 0.0
		if p.Up {
			v = 1
		}
		w.Sample("mrc_switch_port_up", v, port(p)...)
	}
	w.Family("mrc_switch_queue_bytes", metrics.Gauge, "Bytes queued on the port, by queue (data, header).")
	for _, p := range st.Ports {
		w.SampleUint("mrc_switch_queue_bytes", uint64(p.QueuedData), append(port(p), metrics.Label{Name: "queue", Value: "data"})...)
		w.SampleUint("mrc_switch_queue_bytes", uint64(p.QueuedHeader), append(port(p), metrics.Label{Name: "queue", Value: "header"})...)
	}
	w.Family("mrc_switch_queue_max_bytes", metrics.Gauge, "The most bytes the port has had queued.")
	for _, p := range st.Ports {
		w.SampleUint("mrc_switch_queue_max_bytes", uint64(max(0, p.MaxBytes)), port(p)...)
	}
	w.Family("mrc_switch_port_tx_errors_total", metrics.Counter, "Packets the port's link refused (down, neighbour unknown).")
	for _, p := range st.Ports {
		w.SampleUint("mrc_switch_port_tx_errors_total", p.TxErrors, port(p)...)
	}
	w.Family("mrc_switch_port_lost_on_wire_total", metrics.Counter, "Packets in flight on the port's link when it went down.")
	for _, p := range st.Ports {
		w.SampleUint("mrc_switch_port_lost_on_wire_total", p.LostOnWire, port(p)...)
	}
	return w.Err()
}

func dropOrder(m map[string]uint64) []string {
	var out []string
	for _, c := range []string{"malformed", "hop_limit", "no_route", "blackhole", "link_down", "queue_full", "header_queue_full", "lossy_link"} {
		if _, ok := m[c]; ok {
			out = append(out, c)
		}
	}
	return out
}

// Handler serves the switch's metrics, snapshotted in its goroutine at
// each request.
func (s *Switch) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := s.Stats()
		var buf bytes.Buffer
		if err := st.WriteMetrics(&buf, s.t.Plane); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", metrics.ContentType)
		w.Write(buf.Bytes())
	})
}
