package report

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// WriteCSV writes the report as CSV files into dir (which must exist)
// and returns their paths. Every file has a header row and one column
// naming the transport (docs/results.md):
//
//	summary.csv   one row per transport: the table's numbers
//	flows.csv     one row per flow and transport
//	series.csv    goodput over time: total and per plane
//	planes.csv    per-plane bytes, goodput and utilisation
//	links.csv     utilisation by link class (host_t0, t0_t1, ...)
//	drops.csv     packets dropped, by cause
//	failures.csv  one row per failed element: when, bypass times, packets into it
//	steps.csv     a training job's step times (training jobs only)
//	collectives.csv  a training job's collectives: time, algbw, busbw
func (r *Report) WriteCSV(dir string) ([]string, error) {
	var files []string
	write := func(name string, header []string, rows func(add func(...any))) error {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		w := csv.NewWriter(f)
		w.Write(header)
		rows(func(v ...any) {
			rec := make([]string, len(v))
			for i, x := range v {
				rec[i] = cell(x)
			}
			w.Write(rec)
		})
		w.Flush()
		err = w.Error()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		files = append(files, path)
		return nil
	}
	res := r.Results
	err := write("summary.csv", []string{"transport", "flows", "flows_completed", "flows_failed", "bytes_sent", "bytes_delivered",
		"fct_min_ns", "fct_p50_ns", "fct_p99_ns", "fct_max_ns", "fct_mean_ns", "completion_ns", "ideal_ns", "goodput_fraction_of_ideal",
		"retransmits", "trims", "trim_nacks", "loss_timeouts", "ecn_marks", "drops", "pfc_pauses", "qp_errors", "bypass_ns",
		"bypass_qp_p50_ns", "bypass_qp_p99_ns", "bypass_qp_react_p50_ns", "bypass_qp_react_p99_ns", "control_bypass_ns", "failed_control_packets",
		"failed_data_packets", "events", "sim_time_ns", "wall_s", "interrupted", "stopped_by"}, func(add func(...any)) {
		for _, x := range res {
			var drops uint64
			for _, n := range x.Drops {
				drops += n
			}
			var bypass, qp50, qp99, re50, re99, ctl any = "", "", "", "", "", ""
			if x.BypassNs != nil {
				bypass, ctl = *x.BypassNs, controlBypass(&x)
			}
			if b := x.BypassQP; b != nil {
				qp50, qp99, re50, re99 = b.P50, b.P99, b.ReactP50, b.ReactP99
			}
			add(x.Transport, x.Flows, x.FlowsCompleted, x.FlowsFailed, x.BytesSent, x.BytesDelivered,
				x.FCT.Min, x.FCT.P50, x.FCT.P99, x.FCT.Max, x.FCT.Mean, x.CompletionNs, x.IdealNs, x.GoodputFractionOfIdeal,
				x.Retransmits, x.Trims, x.TrimNACKs, x.LossTimeouts, x.ECNMarks, drops, x.PFCPauses, x.QPErrors, bypass,
				qp50, qp99, re50, re99, ctl, controlPackets(&x),
				x.FailedDataPackets, x.Events, x.SimTimeNs, x.WallS, x.Interrupted, x.StoppedBy)
		}
	})
	if err == nil {
		err = write("flows.csv", []string{"transport", "id", "src", "dst", "size", "tag", "start_ns", "fct_ns", "recv_ns", "failed"}, func(add func(...any)) {
			for _, x := range res {
				for _, f := range x.flows {
					add(x.Transport, f.ID, f.Src, f.Dst, f.Size, f.Tag, f.StartNs, f.FCTNs, f.RecvNs, f.Failed)
				}
			}
		})
	}
	if err == nil {
		planes := 0
		for _, x := range res {
			planes = max(planes, len(x.Series.PlaneGbps))
		}
		h := []string{"transport", "time_ns", "total_gbps"}
		for p := range planes {
			h = append(h, "plane"+strconv.Itoa(p)+"_gbps")
		}
		err = write("series.csv", h, func(add func(...any)) {
			for _, x := range res {
				s := &x.Series
				for i, t := range s.TimesNs {
					row := []any{x.Transport, t, s.TotalGbps[i]}
					for p := range planes {
						v := 0.0
						if p < len(s.PlaneGbps) && i < len(s.PlaneGbps[p]) {
							v = s.PlaneGbps[p][i]
						}
						row = append(row, v)
					}
					add(row...)
				}
			}
		})
	}
	if err == nil {
		err = write("planes.csv", []string{"transport", "plane", "tx_bytes", "rx_payload_bytes", "goodput_gbps", "utilisation"}, func(add func(...any)) {
			for _, x := range res {
				for _, p := range x.PerPlane {
					add(x.Transport, p.Plane, p.TxBytes, p.RxPayloadBytes, p.GoodputGbps, p.Utilisation)
				}
			}
		})
	}
	if err == nil {
		err = write("links.csv", []string{"transport", "class", "links", "mean_utilisation", "max_utilisation"}, func(add func(...any)) {
			for _, x := range res {
				for _, l := range x.Links {
					add(x.Transport, l.Class, l.Links, l.Mean, l.Max)
				}
			}
		})
	}
	if err == nil {
		err = write("drops.csv", []string{"transport", "cause", "packets"}, func(add func(...any)) {
			for _, x := range res {
				causes := make([]string, 0, len(x.Drops))
				for c := range x.Drops {
					causes = append(causes, c)
				}
				slices.Sort(causes)
				for _, c := range causes {
					add(x.Transport, c, x.Drops[c])
				}
			}
		})
	}
	if err == nil {
		err = write("failures.csv", []string{"transport", "kind", "element", "at_ns", "until_ns", "bypass_ns", "data_packets",
			"qps", "qp_bypass_p50_ns", "qp_bypass_p99_ns", "control_bypass_ns", "control_packets"}, func(add func(...any)) {
			for _, x := range res {
				for _, f := range x.Failures {
					add(x.Transport, f.Kind, f.Element, f.AtNs, f.UntilNs, f.BypassNs, f.DataPackets,
						f.QPs, f.QPBypassP50Ns, f.QPBypassP99Ns, f.ControlBypassNs, f.ControlPackets)
				}
			}
		})
	}
	if err == nil {
		err = r.jobCSV(write)
	}
	return files, err
}

func cell(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', 6, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}
