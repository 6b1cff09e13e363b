package wire

// DSCP holds the codepoints of MRC's traffic classes (digest §3.2). The
// numeric values are operator choices; the defaults are ours
// (docs/spec-gaps.md).
type DSCP struct {
	Data           uint8 // DSCP_TRIMMABLE: first transmissions (default 10)
	DataRetx       uint8 // DSCP_TRIMMABLE_RETX: retransmissions (default 12)
	Control        uint8 // DSCP_CONTROL: SACK, NACK, endpoint ops (default 46)
	Trimmed        uint8 // DSCP_TRIMMED: set by a switch that trimmed (default 48)
	TrimmedLastHop uint8 // DSCP_TRIMMED_LASTHOP: trimmed at the last hop (default 49)
	// NoTrim is DSCP_NO_TRIM (required by the spec): data that must never
	// be trimmed, sent by a QP with mrc.RTSAttr.NoTrim (default 14; not 26,
	// the RoCE baseline's data DSCP). A switch queues it as data but drops
	// it rather than trim it.
	NoTrim uint8
}

// IsTrim reports whether dscp is one a switch writes on what it trims:
// Trimmed or TrimmedLastHop.
func (d *DSCP) IsTrim(dscp uint8) bool { return dscp == d.Trimmed || dscp == d.TrimmedLastHop }

// DefaultDSCP is the DSCP set an endpoint uses when its mrc.Config.DSCP is zero.
var DefaultDSCP = DSCP{Data: 10, DataRetx: 12, Control: 46, Trimmed: 48, TrimmedLastHop: 49, NoTrim: 14}
