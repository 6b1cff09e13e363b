package metrics

import (
	"cmp"
	"io"
	"slices"
	"strconv"

	"github.com/openmrc/mrc"
	"github.com/openmrc/mrc/mtime"
	"github.com/openmrc/mrc/verbs"
	"github.com/openmrc/mrc/wire"
)

// QP is the state of one QP at scrape time.
type QP struct {
	Host     string // the endpoint the QP belongs to ("" in a one-endpoint process)
	QPN      uint32
	State    verbs.QPState
	Stats    verbs.Stats
	Cwnd     int    // congestion window, bytes
	Inflight int    // bytes in flight
	EVs      [4]int // EVs in each state, indexed by mrc.EVState
}

// QPOf reads q's metrics at now.
func QPOf(host string, q *mrc.QP, now mtime.Time) QP {
	cwnd, inflight := q.Window()
	return QP{Host: host, QPN: q.QPN(), State: q.State(), Stats: q.Stats(), Cwnd: cwnd, Inflight: inflight, EVs: q.EVCounts(now)}
}

// Endpoint is the state of one endpoint (MRC NIC) at scrape time.
type Endpoint struct {
	Host  string
	Stats verbs.Stats // Endpoint.Stats: its own counters plus every QP's
}

// EndpointOf reads ep's metrics.
func EndpointOf(host string, ep *mrc.Endpoint) Endpoint {
	return Endpoint{Host: host, Stats: ep.Stats()}
}

// Port is the counters of one port: a host NIC port or a switch port.
// Each belongs to a plane; sum by plane for per-plane totals.
type Port struct {
	Node  string // host or switch name
	Port  string // port name or number on the node
	Plane int    // the plane the port is on
	// Packets and bytes sent and received through the port.
	TxPackets, RxPackets uint64
	TxBytes, RxBytes     uint64
	// What the port's egress queue did to packets.
	Trims    uint64 // packets trimmed to their headers
	ECNMarks uint64 // packets marked CE
	Drops    uint64 // packets dropped (queue full, link down, ...)
}

// Snapshot is everything a scrape shows.
type Snapshot struct {
	QPs       []QP
	Endpoints []Endpoint
	Ports     []Port
}

type qpCounter struct {
	name, help string
	get        func(*verbs.Stats) uint64
}

// qpCounters are the per-QP counter families that map one to one onto
// mrc.Stats fields.
var qpCounters = []qpCounter{
	{"mrc_qp_data_packets_sent_total", "Data packets sent for the first time.", func(s *verbs.Stats) uint64 { return s.DataSent }},
	{"mrc_qp_payload_bytes_sent_total", "Payload bytes in first transmissions.", func(s *verbs.Stats) uint64 { return s.PayloadSent }},
	{"mrc_qp_retransmits_total", "Data packets sent again.", func(s *verbs.Stats) uint64 { return s.Retransmits }},
	{"mrc_qp_spurious_retransmits_total", "Retransmitted packets whose original was acknowledged.", func(s *verbs.Stats) uint64 { return s.SpuriousRetrans }},
	{"mrc_qp_probes_sent_total", "Reliability probes sent.", func(s *verbs.Stats) uint64 { return s.ProbesSent }},
	{"mrc_qp_sacks_received_total", "Reliability SACKs received.", func(s *verbs.Stats) uint64 { return s.SACKsReceived }},
	{"mrc_qp_ecn_echoes_total", "SACKs reporting a CE mark (M=SKIP_ONCE).", func(s *verbs.Stats) uint64 { return s.ECNEchoes }},
	{"mrc_qp_loss_timeouts_total", "Packets declared lost by the per-packet timer.", func(s *verbs.Stats) uint64 { return s.LossTimeouts }},
	{"mrc_qp_retry_timeouts_total", "QP timeout/retry backstop expirations.", func(s *verbs.Stats) uint64 { return s.RetryTimeouts }},
	{"mrc_qp_writes_done_total", "WRITEs completed at the requester.", func(s *verbs.Stats) uint64 { return s.WritesDone }},
	{"mrc_qp_data_packets_received_total", "Data packets accepted (new PSNs).", func(s *verbs.Stats) uint64 { return s.DataReceived }},
	{"mrc_qp_payload_bytes_received_total", "Payload bytes placed.", func(s *verbs.Stats) uint64 { return s.PayloadReceived }},
	{"mrc_qp_duplicates_total", "Data packets for PSNs already received.", func(s *verbs.Stats) uint64 { return s.Duplicates }},
	{"mrc_qp_trimmed_received_total", "Trimmed headers received (each NACKed).", func(s *verbs.Stats) uint64 { return s.TrimmedReceived }},
	{"mrc_qp_ce_received_total", "Data packets that arrived CE-marked.", func(s *verbs.Stats) uint64 { return s.CEReceived }},
	{"mrc_qp_sacks_sent_total", "Reliability SACKs sent.", func(s *verbs.Stats) uint64 { return s.SACKsSent }},
	{"mrc_qp_nacks_sent_total", "Reliability NACKs sent.", func(s *verbs.Stats) uint64 { return s.NACKsSent }},
	{"mrc_qp_imms_delivered_total", "WRITE_IMM completions delivered at the responder.", func(s *verbs.Stats) uint64 { return s.ImmsDelivered }},
	{"mrc_qp_ev_skips_total", "EVs that went from GOOD to SKIP (ECN mark or mid-fabric trim).", func(s *verbs.Stats) uint64 { return s.EVSkips }},
	{"mrc_qp_ev_retired_total", "EVs retired to ASSUMED_BAD (untrimmed loss).", func(s *verbs.Stats) uint64 { return s.EVRetired }},
	{"mrc_qp_ev_resurrected_total", "EVs brought back from ASSUMED_BAD by probes.", func(s *verbs.Stats) uint64 { return s.EVResurrected }},
	{"mrc_qp_ev_denied_total", "EVs denied by the controller.", func(s *verbs.Stats) uint64 { return s.EVDenied }},
}

var evStates = [4]verbs.EVState{verbs.EVGood, verbs.EVSkip, verbs.EVAssumedBad, verbs.EVDenied}

var qpStates = []verbs.QPState{verbs.StateReset, verbs.StateInit, verbs.StateRTR, verbs.StateRTS, verbs.StateError}

// Write renders s in the Prometheus text exposition format.
func (s *Snapshot) Write(out io.Writer) error {
	w := NewWriter(out)
	qps := slices.Clone(s.QPs)
	slices.SortFunc(qps, func(a, b QP) int { return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.QPN, b.QPN)) })
	qpLabels := func(q *QP, extra ...Label) []Label {
		l := make([]Label, 0, 2+len(extra))
		if q.Host != "" {
			l = append(l, Label{"host", q.Host})
		}
		l = append(l, Label{"qpn", strconv.FormatUint(uint64(q.QPN), 10)})
		return append(l, extra...)
	}

	if len(qps) > 0 {
		w.Family("mrc_qp_state", Gauge, "1 for the state the QP is in.")
		for i := range qps {
			for _, st := range qpStates {
				v := 0.0
				if qps[i].State == st {
					v = 1
				}
				w.Sample("mrc_qp_state", v, qpLabels(&qps[i], Label{"state", st.String()})...)
			}
		}
		for _, c := range qpCounters {
			w.Family(c.name, Counter, c.help)
			for i := range qps {
				w.SampleUint(c.name, c.get(&qps[i].Stats), qpLabels(&qps[i])...)
			}
		}
		const nacks = "mrc_qp_nacks_received_total"
		w.Family(nacks, Counter, "Reliability NACKs received, by reason (other: every reason but the trims).")
		for i := range qps {
			st := &qps[i].Stats
			other := st.NACKsReceived - min(st.NACKsReceived, st.TrimNACKs+st.LastHopNACKs)
			w.SampleUint(nacks, st.TrimNACKs, qpLabels(&qps[i], Label{"reason", wire.NackTrimmed.String()})...)
			w.SampleUint(nacks, st.LastHopNACKs, qpLabels(&qps[i], Label{"reason", wire.NackTrimmedLastHop.String()})...)
			w.SampleUint(nacks, other, qpLabels(&qps[i], Label{"reason", "other"})...)
		}
		w.Family("mrc_qp_cwnd_bytes", Gauge, "Congestion window.")
		for i := range qps {
			w.Sample("mrc_qp_cwnd_bytes", float64(qps[i].Cwnd), qpLabels(&qps[i])...)
		}
		w.Family("mrc_qp_inflight_bytes", Gauge, "Bytes in flight.")
		for i := range qps {
			w.Sample("mrc_qp_inflight_bytes", float64(qps[i].Inflight), qpLabels(&qps[i])...)
		}
		w.Family("mrc_qp_evs", Gauge, "EVs of the QP in each path state.")
		for i := range qps {
			for j, st := range evStates {
				w.Sample("mrc_qp_evs", float64(qps[i].EVs[j]), qpLabels(&qps[i], Label{"state", st.String()})...)
			}
		}
	}

	eps := slices.Clone(s.Endpoints)
	slices.SortFunc(eps, func(a, b Endpoint) int { return cmp.Compare(a.Host, b.Host) })
	if len(eps) > 0 {
		epLabels := func(e *Endpoint, extra ...Label) []Label {
			var l []Label
			if e.Host != "" {
				l = append(l, Label{"host", e.Host})
			}
			return append(l, extra...)
		}
		const drops = "mrc_endpoint_drops_total"
		w.Family(drops, Counter, "Received packets discarded, by reason.")
		for i := range eps {
			for r := range len(eps[i].Stats.Drops) {
				w.SampleUint(drops, eps[i].Stats.Drops[r], epLabels(&eps[i], Label{"reason", verbs.DropReason(r).String()})...)
			}
		}
		const upd = "mrc_endpoint_port_updates_sent_total"
		w.Family(upd, Counter, "Port status updates sent to peers.")
		for i := range eps {
			w.SampleUint(upd, eps[i].Stats.PortUpdateSent, epLabels(&eps[i])...)
		}
	}

	ports := slices.Clone(s.Ports)
	slices.SortFunc(ports, func(a, b Port) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Port, b.Port))
	})
	if len(ports) > 0 {
		pl := func(p *Port, extra ...Label) []Label {
			return append([]Label{{"node", p.Node}, {"port", p.Port}, {"plane", strconv.Itoa(p.Plane)}}, extra...)
		}
		w.Family("mrc_port_packets_total", Counter, "Packets through the port, by direction.")
		for i := range ports {
			w.SampleUint("mrc_port_packets_total", ports[i].TxPackets, pl(&ports[i], Label{"dir", "tx"})...)
			w.SampleUint("mrc_port_packets_total", ports[i].RxPackets, pl(&ports[i], Label{"dir", "rx"})...)
		}
		w.Family("mrc_port_bytes_total", Counter, "Bytes through the port, by direction.")
		for i := range ports {
			w.SampleUint("mrc_port_bytes_total", ports[i].TxBytes, pl(&ports[i], Label{"dir", "tx"})...)
			w.SampleUint("mrc_port_bytes_total", ports[i].RxBytes, pl(&ports[i], Label{"dir", "rx"})...)
		}
		for _, c := range []struct {
			name, help string
			get        func(*Port) uint64
		}{
			{"mrc_port_trims_total", "Packets the port trimmed to their headers.", func(p *Port) uint64 { return p.Trims }},
			{"mrc_port_ecn_marks_total", "Packets the port marked CE.", func(p *Port) uint64 { return p.ECNMarks }},
			{"mrc_port_drops_total", "Packets the port dropped.", func(p *Port) uint64 { return p.Drops }},
		} {
			w.Family(c.name, Counter, c.help)
			for i := range ports {
				w.SampleUint(c.name, c.get(&ports[i]), pl(&ports[i])...)
			}
		}
	}
	return w.Err()
}
