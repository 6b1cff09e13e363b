-- mrc.lua: a Wireshark dissector for MRC (Multipath Reliable Connection),
-- the OCP RDMA transport, as implemented by github.com/openmrc/mrc.
--
-- It decodes MRC packets on UDP port 4791 (RoCEv2): the BTH with MRC's
-- opcodes and its A, rtx and ts bits, the entropy value (EV) with its
-- plane and path, and the METH, TSETH, RETH, ImmDt, AETH, SETH+CC_STATE
-- (SACK bitmap as PSN ranges), NETH (NACK reasons by name), PETH, ERTH
-- and EETH headers, the payload and the ICRC. Trimmed packets, payloads
-- that were not captured (simulated "phantom" payloads, snap lengths) and
-- malformed packets are flagged with expert info.
--
-- How it takes precedence over the built-in InfiniBand/RoCE dissector:
-- it replaces the "udp.port" table entry for 4791 with itself, keeping
-- the dissector that was there. Packets whose BTH opcode is not in MRC's
-- space (0xC0-0xDF: opcode[7:5] = 0b110) are handed to that dissector, so
-- ordinary RoCEv2 traffic (RC, UD, CNP, ...) decodes exactly as before.
--
-- The byte layouts are those of docs/wire.md in the repository, which
-- reconstructs the MRC 1.0 specification from secondary sources; the EV
-- layout (plane and path bits) is the implementation's (docs/spec-gaps.md).
-- Installation: docs/wireshark.md. Works with Wireshark 3.6 and later
-- (Lua 5.2 to 5.4); it uses no bit library.

local MRC_UDP_PORT = 4791

local mrc = Proto("mrc", "Multipath Reliable Connection")

---------------------------------------------------------------------------
-- Names

local opcodes = {
    [0xC6] = "WRITE_FIRST",
    [0xC7] = "WRITE_MIDDLE",
    [0xC8] = "WRITE_LAST",
    [0xC9] = "WRITE_LAST_IMM",
    [0xCA] = "WRITE_ONLY",
    [0xCB] = "WRITE_ONLY_IMM",
    [0xD1] = "ACKNOWLEDGE",
    [0xD8] = "ENDPOINT_REQUEST",
    [0xD9] = "ENDPOINT_RESPONSE",
    [0xDC] = "RELIABILITY_SACK",
    [0xDD] = "RELIABILITY_NACK",
    [0xDE] = "RELIABILITY_PROBE_REQ",
}

local nack_reasons = {
    [0x01] = "TRIMMED",
    [0x02] = "TRIMMED_LASTHOP",
    [0x06] = "NO_BITMAP",
    [0x07] = "NO_PKT_BUFFER",
    [0x0A] = "NO_RESOURCE",
    [0x0B] = "PSN_OOR_WINDOW",
    [0x0C] = "WIMM_LIMIT",
    [0x19] = "UNEXP_EVENT",
}

local sack_modes = { [0] = "NONE", [1] = "SKIP_ONCE", [2] = "ALWAYS_SKIP", [3] = "reserved" }
local ep_ops = { [0] = "PORT_STATUS_UPDATE", [1] = "EV_PROBE", [2] = "reserved", [3] = "reserved" }

-- Header lengths (docs/wire.md).
local BTH_LEN, METH_LEN, TSETH_LEN, RETH_LEN, IMMDT_LEN = 12, 4, 4, 16, 4
local AETH_LEN, SACK_LEN, NETH_LEN, PETH_LEN, ERTH_LEN, EETH_LEN = 4, 36, 20, 16, 16, 36
local ICRC_LEN = 4

local function is_data(op) return op >= 0xC6 and op <= 0xCB end
local function has_imm(op) return op == 0xC9 or op == 0xCB end

-- header_len returns the length of the MRC headers after the UDP header.
local function header_len(op, ts)
    if is_data(op) then
        local n = BTH_LEN + METH_LEN + RETH_LEN
        if ts then n = n + TSETH_LEN end
        if has_imm(op) then n = n + IMMDT_LEN end
        return n
    end
    local ext = { [0xD1] = AETH_LEN, [0xD8] = ERTH_LEN, [0xD9] = EETH_LEN,
                  [0xDC] = SACK_LEN, [0xDD] = NETH_LEN, [0xDE] = PETH_LEN }
    return BTH_LEN + (ext[op] or 0)
end

-- Arithmetic bit helpers (no bit library: portable across Lua versions).
-- bits returns bits [shift, shift+width) of the non-negative integer v, as
-- an integer (math.floor keeps Lua 5.3+ from yielding a float).
local function bits(v, shift, width) return math.floor(math.floor(v / 2 ^ shift) % 2 ^ width) end

-- EV layout of the implementation (mrc.EVPlane, mrc.EVPath): plane in
-- bits 15-12, path in bits 11-0.
local function ev_plane(ev) return bits(ev, 12, 4) end
local function ev_path(ev) return bits(ev, 0, 12) end

---------------------------------------------------------------------------
-- Fields

local f = {}

-- BTH
f.opcode   = ProtoField.uint8("mrc.bth.opcode", "Opcode", base.HEX, opcodes)
f.se       = ProtoField.bool("mrc.bth.se", "Solicited event", 8, nil, 0x80)
f.m        = ProtoField.bool("mrc.bth.m", "MigReq", 8, nil, 0x40)
f.padcnt   = ProtoField.uint8("mrc.bth.padcnt", "Pad count", base.DEC, nil, 0x30)
f.tver     = ProtoField.uint8("mrc.bth.tver", "Transport header version", base.DEC, nil, 0x0F)
f.pkey     = ProtoField.uint16("mrc.bth.pkey", "Partition key", base.HEX)
f.resv8a   = ProtoField.uint8("mrc.bth.resv8a", "Reserved (FECN/BECN)", base.HEX)
f.destqp   = ProtoField.uint24("mrc.bth.destqp", "Destination QP", base.HEX)
f.a        = ProtoField.bool("mrc.bth.a", "AckReq", 8, nil, 0x80)
f.resv6    = ProtoField.uint8("mrc.bth.resv6", "Reserved", base.HEX, nil, 0x40)
f.rtx      = ProtoField.bool("mrc.bth.rtx", "Retransmission", 8, nil, 0x20)
f.ts       = ProtoField.bool("mrc.bth.ts", "TSETH present", 8, nil, 0x10)
f.bresv    = ProtoField.uint8("mrc.bth.resv", "Reserved", base.HEX, nil, 0x0F)
f.psn      = ProtoField.uint24("mrc.bth.psn", "PSN", base.DEC)

-- EV (generated from the UDP source port and the outermost flow label)
f.ev       = ProtoField.uint32("mrc.ev", "Entropy value", base.HEX)
f.ev_plane = ProtoField.uint8("mrc.ev.plane", "Plane", base.DEC)
f.ev_path  = ProtoField.uint16("mrc.ev.path", "Path", base.DEC)

-- METH, TSETH, RETH, ImmDt, AETH
f.rqmsn    = ProtoField.uint16("mrc.meth.rqmsn", "RQ message sequence number", base.DEC)
f.msn      = ProtoField.uint16("mrc.meth.msn", "Message sequence number", base.DEC)
f.ts_tx    = ProtoField.uint16("mrc.tseth.tx_timestamp", "Tx timestamp", base.DEC)
f.ts_tsr   = ProtoField.bool("mrc.tseth.tsr", "Timestamp resolution flag", 16, nil, 0x8000)
f.ts_resv  = ProtoField.uint16("mrc.tseth.resv", "Reserved", base.HEX, nil, 0x7FF0)
f.ts_ftype = ProtoField.uint16("mrc.tseth.ftype", "Format type", base.DEC, nil, 0x000F)
f.va       = ProtoField.uint64("mrc.reth.va", "Virtual address", base.HEX)
f.rkey     = ProtoField.uint32("mrc.reth.rkey", "Remote key", base.HEX)
f.dmalen   = ProtoField.uint32("mrc.reth.dma_len", "DMA length", base.DEC)
f.immdt    = ProtoField.uint32("mrc.immdt", "Immediate data", base.HEX)
f.syndrome = ProtoField.uint8("mrc.aeth.syndrome", "Syndrome", base.HEX)
f.aeth_msn = ProtoField.uint24("mrc.aeth.msn", "Message sequence number", base.DEC)

-- Fields of the control headers' common prefix and their TSETH tails,
-- one set per header so that filters can tell them apart.
local function control_fields(p)
    f[p .. "type"] = ProtoField.uint8("mrc." .. p .. ".type", "Type", base.DEC, nil, 0xF0)
    f[p .. "next_hdr"] = ProtoField.uint16("mrc." .. p .. ".next_hdr", "Next header", base.DEC, nil, 0x0F80)
end
control_fields("seth")
control_fields("neth")
control_fields("peth")
control_fields("erth")
control_fields("eeth")
local function tseth_fields(p)
    f[p .. "tx"] = ProtoField.uint16("mrc." .. p .. ".tx_timestamp", "Tx timestamp", base.DEC)
    f[p .. "tsr"] = ProtoField.bool("mrc." .. p .. ".tsr", "Timestamp resolution flag", 16, nil, 0x8000)
    f[p .. "tresv"] = ProtoField.uint16("mrc." .. p .. ".ts_resv", "Reserved", base.HEX, nil, 0x7FF0)
    f[p .. "ftype"] = ProtoField.uint16("mrc." .. p .. ".ftype", "Format type", base.DEC, nil, 0x000F)
end
tseth_fields("peth")
tseth_fields("erth")

-- SETH + CC_STATE
f.s_m      = ProtoField.uint8("mrc.seth.m", "M (EV hint)", base.DEC, sack_modes, 0x60)
f.s_resv1  = ProtoField.uint8("mrc.seth.resv1", "Reserved", base.HEX, nil, 0x1C)
f.s_pr     = ProtoField.bool("mrc.seth.pr", "Probe response", 8, nil, 0x02)
f.s_rtx    = ProtoField.bool("mrc.seth.rtx", "Trigger was a retransmission (mrc)", 8, nil, 0x01)
f.s_apo    = ProtoField.int16("mrc.seth.ack_psn_offset", "ACK PSN offset", base.DEC)
f.s_apsn   = ProtoField.uint24("mrc.seth.ack_psn", "ACK PSN", base.DEC)
f.s_ent    = ProtoField.uint32("mrc.seth.entropy", "Entropy (reflected EV)", base.HEX)
f.s_plane  = ProtoField.uint8("mrc.seth.entropy.plane", "Plane", base.DEC)
f.s_path   = ProtoField.uint16("mrc.seth.entropy.path", "Path", base.DEC)
f.s_spdcid = ProtoField.uint16("mrc.seth.spdcid", "Source PDC id", base.DEC)
f.s_dpdcid = ProtoField.uint16("mrc.seth.dpdcid", "Destination PDC id", base.DEC)
f.s_resv12 = ProtoField.uint8("mrc.seth.resv12", "Reserved", base.HEX)
f.s_cack   = ProtoField.uint24("mrc.seth.cack_psn", "Cumulative ACK PSN", base.DEC)
f.s_cctype = ProtoField.uint8("mrc.seth.cc_type", "CC type", base.DEC, nil, 0xF0)
f.s_ccfl   = ProtoField.uint8("mrc.seth.cc_fl", "CC flags", base.HEX, nil, 0x0F)
f.s_mpr    = ProtoField.uint8("mrc.seth.mpr", "MPR (x128 PSNs)", base.DEC)
f.s_soff   = ProtoField.int16("mrc.seth.sack_offset", "SACK offset", base.DEC)
f.s_base   = ProtoField.uint24("mrc.seth.sack_base", "SACK bitmap base PSN", base.DEC)
f.s_bitmap = ProtoField.uint64("mrc.seth.sack_bitmap", "SACK bitmap", base.HEX)
f.s_sacked = ProtoField.string("mrc.seth.sacked", "SACKed PSNs")
f.s_spsn   = ProtoField.uint24("mrc.seth.sacked_psn", "SACKed PSN", base.DEC)
f.c_tx     = ProtoField.uint16("mrc.cc.tx_timestamp", "Tx timestamp (reflected)", base.DEC)
f.c_resv   = ProtoField.uint16("mrc.cc.resv", "Reserved", base.HEX, nil, 0x8000)
f.c_ooo    = ProtoField.uint16("mrc.cc.ooo_count", "Out-of-order count", base.DEC, nil, 0x7FFF)
f.c_rc     = ProtoField.bool("mrc.cc.r_c", "Restore cwnd", 8, nil, 0x80)
f.c_pen    = ProtoField.uint8("mrc.cc.rcv_cwnd_pen", "Receiver cwnd penalty", base.DEC, nil, 0x7F)
f.c_rcvd   = ProtoField.uint24("mrc.cc.rcvd_bytes", "Received bytes (x256)", base.DEC)

-- NETH
f.n_resv1  = ProtoField.uint8("mrc.neth.resv1", "Reserved", base.HEX, nil, 0x5F)
f.n_ce     = ProtoField.bool("mrc.neth.ce", "NACKed packet was CE-marked", 8, nil, 0x20)
f.n_reason = ProtoField.uint8("mrc.neth.reason", "NACK reason", base.HEX, nack_reasons)
f.n_vendor = ProtoField.uint8("mrc.neth.vendor_info", "Vendor info", base.HEX)
f.n_ent    = ProtoField.uint32("mrc.neth.entropy", "Entropy (reflected EV)", base.HEX)
f.n_plane  = ProtoField.uint8("mrc.neth.entropy.plane", "Plane", base.DEC)
f.n_path   = ProtoField.uint16("mrc.neth.entropy.path", "Path", base.DEC)
f.n_spdcid = ProtoField.uint16("mrc.neth.spdcid", "Source PDC id", base.DEC)
f.n_dpdcid = ProtoField.uint16("mrc.neth.dpdcid", "Destination PDC id", base.DEC)
f.n_resv12 = ProtoField.uint8("mrc.neth.resv12", "Reserved", base.HEX)
f.n_psn    = ProtoField.uint24("mrc.neth.nack_psn", "NACK PSN", base.DEC)
f.n_cctype = ProtoField.uint8("mrc.neth.cc_type", "CC type", base.DEC, nil, 0xF0)
f.n_ccfl   = ProtoField.uint8("mrc.neth.cc_fl", "CC flags", base.HEX, nil, 0x0F)
f.n_resv17 = ProtoField.uint8("mrc.neth.resv17", "Reserved", base.HEX)
f.n_tx     = ProtoField.uint16("mrc.neth.tx_timestamp", "Tx timestamp", base.DEC)

-- PETH
f.p_resv1  = ProtoField.uint8("mrc.peth.resv1", "Reserved", base.HEX, nil, 0x7F)
f.p_resv2  = ProtoField.uint8("mrc.peth.resv2", "Reserved", base.HEX)
f.p_vendor = ProtoField.uint8("mrc.peth.vendor_info", "Vendor info", base.HEX)
f.p_id     = ProtoField.uint16("mrc.peth.probe_id", "Probe id", base.DEC)
f.p_resv6  = ProtoField.uint16("mrc.peth.resv6", "Reserved", base.HEX)
f.p_spdcid = ProtoField.uint16("mrc.peth.spdcid", "Source PDC id", base.DEC)
f.p_dpdcid = ProtoField.uint16("mrc.peth.dpdcid", "Destination PDC id", base.DEC)

-- ERTH
f.r_resv1  = ProtoField.uint8("mrc.erth.resv1", "Reserved", base.HEX, nil, 0x7C)
f.r_op     = ProtoField.uint8("mrc.erth.op", "Operation", base.DEC, ep_ops, 0x03)
f.r_resv2  = ProtoField.uint8("mrc.erth.resv2", "Reserved", base.HEX)
f.r_vendor = ProtoField.uint8("mrc.erth.vendor_info", "Vendor info", base.HEX)
f.r_mask   = ProtoField.uint32("mrc.erth.port_status_mask", "Port status mask (bit i: plane i up)", base.HEX)
f.r_resv8  = ProtoField.uint32("mrc.erth.resv8", "Reserved", base.HEX)

-- EETH
f.e_resv1  = ProtoField.uint8("mrc.eeth.resv1", "Reserved", base.HEX, nil, 0x7C)
f.e_op     = ProtoField.uint8("mrc.eeth.op", "Operation", base.DEC, ep_ops, 0x03)
f.e_resv2  = ProtoField.uint16("mrc.eeth.resv2", "Reserved", base.HEX)
f.e_mask   = ProtoField.uint32("mrc.eeth.port_status_mask", "Port status mask (bit i: plane i up)", base.HEX)
f.e_resv8  = ProtoField.bytes("mrc.eeth.resv8", "Reserved")
f.e_tx     = ProtoField.uint16("mrc.eeth.tx_timestamp", "Tx timestamp (echoed; matches the request)", base.DEC)
f.e_resv30 = ProtoField.bytes("mrc.eeth.resv30", "Reserved")

-- Payload, pad, ICRC, trimming
f.payload     = ProtoField.bytes("mrc.payload", "Payload")
f.payload_len = ProtoField.uint32("mrc.payload_len", "Payload length", base.DEC)
f.pad         = ProtoField.bytes("mrc.pad", "Pad")
f.icrc        = ProtoField.uint32("mrc.icrc", "ICRC", base.HEX)
f.trimmed     = ProtoField.bool("mrc.trimmed", "Trimmed")

local fields = {}
for _, v in pairs(f) do fields[#fields + 1] = v end
mrc.fields = fields

local ef = {
    malformed      = ProtoExpert.new("mrc.malformed", "Malformed MRC packet",
                                     expert.group.MALFORMED, expert.severity.ERROR),
    unknown_opcode = ProtoExpert.new("mrc.unknown_opcode", "Unknown MRC opcode",
                                     expert.group.MALFORMED, expert.severity.ERROR),
    trimmed        = ProtoExpert.new("mrc.trimmed.expert", "Trimmed by a switch: payload, pad and ICRC removed",
                                     expert.group.SEQUENCE, expert.severity.NOTE),
    not_captured   = ProtoExpert.new("mrc.not_captured", "Part of the packet was not captured",
                                     expert.group.UNDECODED, expert.severity.NOTE),
    retransmission = ProtoExpert.new("mrc.retransmission", "Retransmission",
                                     expert.group.SEQUENCE, expert.severity.NOTE),
    nack           = ProtoExpert.new("mrc.nack", "Reliability NACK",
                                     expert.group.SEQUENCE, expert.severity.WARN),
}
mrc.experts = { ef.malformed, ef.unknown_opcode, ef.trimmed, ef.not_captured, ef.retransmission, ef.nack }

local udp_srcport = Field.new("udp.srcport")
local ipv6_flow = Field.new("ipv6.flow")
local ipv6_ecn = Field.new("ipv6.tclass.ecn")
local ipv6_dscp = Field.new("ipv6.tclass.dscp")
local udp_length = Field.new("udp.length")
local frame_len = Field.new("frame.len")
local frame_cap_len = Field.new("frame.cap_len")

---------------------------------------------------------------------------
-- Helpers

-- snapped reports whether the frame was cut short on purpose (snap length,
-- or a simulation's phantom payload): then missing bytes are not an error.
local function snapped()
    local l, c = frame_len(), frame_cap_len()
    return l ~= nil and c ~= nil and c.value < l.value
end

-- the outermost IPv6 flow label (the one the fabric hashes), or nil.
local function outer_flow()
    local all = { ipv6_flow() }
    if #all == 0 then return nil end
    return all[1].value
end

-- the ECN codepoint of the outermost IPv6 header, or nil.
local function outer_ecn()
    local all = { ipv6_ecn() }
    if #all == 0 then return nil end
    return all[1].value
end

-- declared returns the UDP payload length the (innermost) UDP header
-- declares, or nil.
local function declared()
    local u = { udp_length() }
    if #u == 0 then return nil end
    return u[#u].value - 8
end

-- trim_dscp reports an outermost DSCP a switch writes on what it trims
-- (the default codepoints, 48 and 49).
local function trim_dscp()
    local d = { ipv6_dscp() }
    return #d > 0 and (d[1].value == 48 or d[1].value == 49)
end

local function add_ev(tree, tvb_range, ev, f_ev, f_plane, f_path, label)
    local t
    if tvb_range ~= nil then
        t = tree:add(f_ev, tvb_range)
    else
        t = tree:add(f_ev, ev)
        t:set_generated()
    end
    t:append_text(string.format(" (plane %d, path %d)", ev_plane(ev), ev_path(ev)))
    t:add(f_plane, ev_plane(ev)):set_generated()
    t:add(f_path, ev_path(ev)):set_generated()
    return t
end

local function ev_text(ev)
    return string.format("0x%08x (plane %d, path %d)", ev, ev_plane(ev), ev_path(ev))
end

-- psn_ranges formats a list of PSNs (ascending within the bitmap window)
-- as "5-7,9".
local function psn_ranges(psns)
    if #psns == 0 then return "none" end
    local out, i = {}, 1
    while i <= #psns do
        local j = i
        while j < #psns and psns[j + 1] == (psns[j] + 1) % 16777216 do j = j + 1 end
        if i == j then
            out[#out + 1] = tostring(psns[i])
        else
            out[#out + 1] = psns[i] .. "-" .. psns[j]
        end
        i = j + 1
    end
    return table.concat(out, ",")
end

local function planes_up(mask)
    local up = {}
    for i = 0, 31 do
        if bits(mask, i, 1) == 1 then up[#up + 1] = tostring(i) end
    end
    if #up == 0 then return "none" end
    return table.concat(up, ",")
end

local function add_control_prefix(t, tvb, p)
    t:add(f[p .. "type"], tvb(0, 1))
    t:add(f[p .. "next_hdr"], tvb(0, 2))
end

local function add_tseth(t, r, p)
    t:add(f[p .. "tx"], r(0, 2))
    t:add(f[p .. "tsr"], r(2, 2))
    t:add(f[p .. "tresv"], r(2, 2))
    t:add(f[p .. "ftype"], r(2, 2))
end

---------------------------------------------------------------------------
-- Header dissectors: each gets the tvb range of exactly its header.

local function dissect_data(tvb, t, op, ts, info)
    local o = 0
    local m = t:add(tvb(o, METH_LEN), "METH")
    m:add(f.rqmsn, tvb(o, 2))
    m:add(f.msn, tvb(o + 2, 2))
    info[#info + 1] = "msn " .. tvb(o + 2, 2):uint()
    o = o + METH_LEN
    if ts then
        local s = t:add(tvb(o, TSETH_LEN), "TSETH")
        s:add(f.ts_tx, tvb(o, 2))
        s:add(f.ts_tsr, tvb(o + 2, 2))
        s:add(f.ts_resv, tvb(o + 2, 2))
        s:add(f.ts_ftype, tvb(o + 2, 2))
        o = o + TSETH_LEN
    end
    local r = t:add(tvb(o, RETH_LEN), "RETH")
    r:add(f.va, tvb(o, 8))
    r:add(f.rkey, tvb(o + 8, 4))
    r:add(f.dmalen, tvb(o + 12, 4))
    info[#info + 1] = "va 0x" .. tvb(o, 8):uint64():tohex()
    o = o + RETH_LEN
    if has_imm(op) then
        t:add(f.immdt, tvb(o, 4))
        info[#info + 1] = string.format("imm 0x%08x", tvb(o, 4):uint())
    end
end

local function dissect_sack(tvb, t, info)
    local s = t:add(tvb(0, 28), "SETH")
    add_control_prefix(s, tvb, "seth")
    s:add(f.s_m, tvb(1, 1))
    s:add(f.s_resv1, tvb(1, 1))
    s:add(f.s_pr, tvb(1, 1))
    s:add(f.s_rtx, tvb(1, 1))
    local cack = tvb(13, 3):uint()
    local apo = tvb(2, 2):int()
    s:add(f.s_apo, tvb(2, 2))
    s:add(f.s_apsn, (cack + apo) % 16777216):set_generated()
    local ev = tvb(4, 4):uint()
    add_ev(s, tvb(4, 4), ev, f.s_ent, f.s_plane, f.s_path)
    s:add(f.s_spdcid, tvb(8, 2))
    s:add(f.s_dpdcid, tvb(10, 2))
    s:add(f.s_resv12, tvb(12, 1))
    s:add(f.s_cack, tvb(13, 3))
    s:add(f.s_cctype, tvb(16, 1))
    s:add(f.s_ccfl, tvb(16, 1))
    s:add(f.s_mpr, tvb(17, 1)):append_text(string.format(" (%d PSNs)", tvb(17, 1):uint() * 128))
    local soff = tvb(18, 2):int()
    s:add(f.s_soff, tvb(18, 2))
    local base = (cack + soff) % 16777216
    s:add(f.s_base, base):set_generated()
    local bm = s:add(f.s_bitmap, tvb(20, 8))
    -- Bit i of the bitmap (i = 0 the LSB of the big-endian field, b0 of its
    -- last byte) is PSN base+i.
    local hi, lo = tvb(20, 4):uint(), tvb(24, 4):uint()
    local psns = {}
    for i = 0, 63 do
        local set
        if i < 32 then set = bits(lo, i, 1) == 1 else set = bits(hi, i - 32, 1) == 1 end
        if set then psns[#psns + 1] = (base + i) % 16777216 end
    end
    local ranges = psn_ranges(psns)
    local st = bm:add(f.s_sacked, ranges)
    st:set_generated()
    for _, p in ipairs(psns) do bm:add(f.s_spsn, p):set_generated() end
    local c = t:add(tvb(28, 8), "CC_STATE")
    c:add(f.c_tx, tvb(28, 2))
    c:add(f.c_resv, tvb(30, 2))
    c:add(f.c_ooo, tvb(30, 2))
    c:add(f.c_rc, tvb(32, 1))
    c:add(f.c_pen, tvb(32, 1))
    c:add(f.c_rcvd, tvb(33, 3)):append_text(string.format(" (%d bytes)", tvb(33, 3):uint() * 256))
    local m = bits(tvb(1, 1):uint(), 5, 2)
    info[#info + 1] = string.format("cack %d sacked %s m %s", cack, ranges, sack_modes[m])
    if bits(tvb(1, 1):uint(), 1, 1) == 1 then info[#info + 1] = "pr" end
    if bits(tvb(1, 1):uint(), 0, 1) == 1 then info[#info + 1] = "rtx" end
    info[#info + 1] = "for ev " .. ev_text(ev)
end

local function dissect_nack(tvb, t, info)
    local n = t:add(tvb(0, NETH_LEN), "NETH")
    add_control_prefix(n, tvb, "neth")
    n:add(f.n_resv1, tvb(1, 1))
    n:add(f.n_ce, tvb(1, 1))
    local reason = tvb(2, 1):uint()
    n:add(f.n_reason, tvb(2, 1))
    n:add(f.n_vendor, tvb(3, 1))
    local ev = tvb(4, 4):uint()
    add_ev(n, tvb(4, 4), ev, f.n_ent, f.n_plane, f.n_path)
    n:add(f.n_spdcid, tvb(8, 2))
    n:add(f.n_dpdcid, tvb(10, 2))
    n:add(f.n_resv12, tvb(12, 1))
    n:add(f.n_psn, tvb(13, 3))
    n:add(f.n_cctype, tvb(16, 1))
    n:add(f.n_ccfl, tvb(16, 1))
    n:add(f.n_resv17, tvb(17, 1))
    n:add(f.n_tx, tvb(18, 2))
    local name = nack_reasons[reason] or string.format("NackReason(0x%02x)", reason)
    n:add_proto_expert_info(ef.nack, "NACK " .. name .. " for PSN " .. tvb(13, 3):uint())
    local ce = bits(tvb(1, 1):uint(), 5, 1) == 1 and " ce" or ""
    info[#info + 1] = string.format("%s psn %d%s for ev %s", name, tvb(13, 3):uint(), ce, ev_text(ev))
end

local function dissect_probe(tvb, t, info)
    local p = t:add(tvb(0, PETH_LEN), "PETH")
    add_control_prefix(p, tvb, "peth")
    p:add(f.p_resv1, tvb(1, 1))
    p:add(f.p_resv2, tvb(2, 1))
    p:add(f.p_vendor, tvb(3, 1))
    p:add(f.p_id, tvb(4, 2))
    p:add(f.p_resv6, tvb(6, 2))
    p:add(f.p_spdcid, tvb(8, 2))
    p:add(f.p_dpdcid, tvb(10, 2))
    add_tseth(p, tvb(12, 4), "peth")
    info[#info + 1] = "probe " .. tvb(4, 2):uint()
end

local function dissect_ep_request(tvb, t, info)
    local r = t:add(tvb(0, ERTH_LEN), "ERTH")
    add_control_prefix(r, tvb, "erth")
    r:add(f.r_resv1, tvb(1, 1))
    r:add(f.r_op, tvb(1, 1))
    r:add(f.r_resv2, tvb(2, 1))
    r:add(f.r_vendor, tvb(3, 1))
    local mask = tvb(4, 4):uint()
    r:add(f.r_mask, tvb(4, 4)):append_text(" (planes up: " .. planes_up(mask) .. ")")
    r:add(f.r_resv8, tvb(8, 4))
    add_tseth(r, tvb(12, 4), "erth")
    info[#info + 1] = ep_ops[bits(tvb(1, 1):uint(), 0, 2)] .. " planes up " .. planes_up(mask)
end

local function dissect_ep_response(tvb, t, info)
    local r = t:add(tvb(0, EETH_LEN), "EETH")
    add_control_prefix(r, tvb, "eeth")
    r:add(f.e_resv1, tvb(1, 1))
    r:add(f.e_op, tvb(1, 1))
    r:add(f.e_resv2, tvb(2, 2))
    local mask = tvb(4, 4):uint()
    r:add(f.e_mask, tvb(4, 4)):append_text(" (planes up: " .. planes_up(mask) .. ")")
    r:add(f.e_resv8, tvb(8, 20))
    r:add(f.e_tx, tvb(28, 2))
    r:add(f.e_resv30, tvb(30, 6))
    info[#info + 1] = string.format("%s ts %d planes up %s", ep_ops[bits(tvb(1, 1):uint(), 0, 2)],
        tvb(28, 2):uint(), planes_up(mask))
end

local function dissect_ack(tvb, t, info)
    local a = t:add(tvb(0, AETH_LEN), "AETH")
    a:add(f.syndrome, tvb(0, 1))
    a:add(f.aeth_msn, tvb(1, 3))
    info[#info + 1] = string.format("syndrome 0x%02x msn %d", tvb(0, 1):uint(), tvb(1, 3):uint())
end

---------------------------------------------------------------------------
-- The dissector

local roce -- the dissector UDP port 4791 had before this script

-- malformed flags item as malformed and notes why in the Info column.
local function malformed(info, item, msg)
    item:add_proto_expert_info(ef.malformed, msg)
    info.problems[#info.problems + 1] = "[Malformed: " .. msg .. "]"
end

local function set_info(pinfo, info)
    local s = table.concat(info, " ")
    if #info.problems > 0 then s = s .. " " .. table.concat(info.problems, " ") end
    pinfo.cols.info:set(s)
end

function mrc.dissector(tvb, pinfo, tree)
    if tvb:len() < 1 then return 0 end
    local op = tvb(0, 1):uint()
    if op < 0xC0 or op > 0xDF then
        -- Not MRC's opcode space: plain RoCEv2 (or something else).
        if roce ~= nil then return roce:call(tvb, pinfo, tree) end
        return 0
    end
    pinfo.cols.protocol = "MRC"
    local reported = tvb:reported_length_remaining()
    local t = tree:add(mrc, tvb(0, math.min(tvb:len(), reported)))
    local name = opcodes[op]
    local info = { name or string.format("opcode 0x%02x", op), problems = {} }

    if tvb:len() < BTH_LEN then
        if snapped() then
            t:add_proto_expert_info(ef.not_captured, "BTH not captured")
        else
            malformed(info, t, "truncated BTH")
        end
        set_info(pinfo, info)
        return tvb:len()
    end

    -- BTH
    local b = t:add(tvb(0, BTH_LEN), "Base Transport Header")
    b:add(f.opcode, tvb(0, 1))
    b:add(f.se, tvb(1, 1))
    b:add(f.m, tvb(1, 1))
    b:add(f.padcnt, tvb(1, 1))
    b:add(f.tver, tvb(1, 1))
    b:add(f.pkey, tvb(2, 2))
    b:add(f.resv8a, tvb(4, 1))
    b:add(f.destqp, tvb(5, 3))
    b:add(f.a, tvb(8, 1))
    b:add(f.resv6, tvb(8, 1))
    b:add(f.rtx, tvb(8, 1))
    b:add(f.ts, tvb(8, 1))
    b:add(f.bresv, tvb(8, 1))
    b:add(f.psn, tvb(9, 3))
    local flags = tvb(8, 1):uint()
    local a, rtx, ts = bits(flags, 7, 1) == 1, bits(flags, 5, 1) == 1, bits(flags, 4, 1) == 1
    local pad = bits(tvb(1, 1):uint(), 4, 2)
    local psn = tvb(9, 3):uint()
    info[#info + 1] = string.format("qp 0x%06x", tvb(5, 3):uint())
    if is_data(op) then info[#info + 1] = "psn " .. psn end
    if rtx then b:add_proto_expert_info(ef.retransmission, "Retransmission of PSN " .. psn) end

    -- EV: UDP source port (EV[31:16]) and outermost flow label (EV[15:0]).
    local sp, fl = udp_srcport(), outer_flow()
    local ev
    if sp ~= nil and fl ~= nil then
        ev = sp.value * 65536 + fl % 65536
        add_ev(t, nil, ev, f.ev, f.ev_plane, f.ev_path)
    end

    if name == nil then
        t:add_proto_expert_info(ef.unknown_opcode, string.format("Unknown MRC opcode 0x%02x", op))
        info.problems[#info.problems + 1] = "[Unknown opcode]"
        set_info(pinfo, info)
        return tvb:len()
    end

    local hlen = header_len(op, ts)
    if reported < hlen then
        malformed(info, t, string.format("%d bytes of UDP payload for %d bytes of %s headers", reported, hlen, name))
        set_info(pinfo, info)
        return tvb:len()
    end
    if tvb:len() < hlen then
        if snapped() then
            t:add_proto_expert_info(ef.not_captured, "Headers not captured")
        else
            malformed(info, t, string.format("truncated: %d of %d header bytes", tvb:len(), hlen))
        end
        set_info(pinfo, info)
        return tvb:len()
    end

    local ext = tvb(BTH_LEN, hlen - BTH_LEN):tvb()
    if is_data(op) then
        dissect_data(ext, t, op, ts, info)
    elseif op == 0xDC then
        dissect_sack(ext, t, info)
    elseif op == 0xDD then
        dissect_nack(ext, t, info)
    elseif op == 0xDE then
        dissect_probe(ext, t, info)
    elseif op == 0xD8 then
        dissect_ep_request(ext, t, info)
    elseif op == 0xD9 then
        dissect_ep_response(ext, t, info)
    elseif op == 0xD1 then
        dissect_ack(ext, t, info)
    end
    if ev ~= nil then info[#info + 1] = "ev " .. ev_text(ev) end
    if rtx then info[#info + 1] = "RTX" end
    if ts then info[#info + 1] = "TS" end
    if a then info[#info + 1] = "ACKREQ" end
    local ecn = outer_ecn()
    if ecn == 3 then info[#info + 1] = "CE" end

    -- What follows the headers: payload, pad and ICRC, or nothing (trimmed).
    -- A frame that ends before the UDP length says is a fixed-size trim
    -- when it is data a switch marked trimmed (docs/spec-gaps.md row 22),
    -- and truncated otherwise.
    local rem = reported - hlen
    local d = declared()
    local missing = d ~= nil and d - reported or 0
    if missing > 0 and is_data(op) and trim_dscp() then
        local plen = d - hlen - pad - ICRC_LEN
        t:add(f.trimmed, true):set_generated()
        t:add_proto_expert_info(ef.trimmed, "Trimmed by a switch: cut to a fixed size, lengths left as they were")
        info[#info + 1] = "TRIMMED"
        t:add(f.payload_len, plen):set_generated()
        info[#info + 1] = "len " .. plen
        if snapped() then info[#info + 1] = "(payload not captured)" end
    elseif missing > 0 then
        malformed(info, t, string.format("truncated datagram: %d bytes the length fields declare are missing", missing))
    elseif rem == 0 then
        if is_data(op) then
            t:add(f.trimmed, true):set_generated()
            t:add_proto_expert_info(ef.trimmed)
            info[#info + 1] = "TRIMMED"
        else
            malformed(info, t, "no ICRC")
        end
    elseif rem < pad + ICRC_LEN then
        malformed(info, t, string.format("%d bytes after the headers cannot hold pad %d and the ICRC", rem, pad))
    else
        local plen = rem - pad - ICRC_LEN
        if is_data(op) then
            t:add(f.payload_len, plen):set_generated()
            info[#info + 1] = "len " .. plen
        elseif plen > 0 then
            malformed(info, t, plen .. " bytes of payload on a control packet")
        end
        local have = tvb:len() - hlen -- captured bytes after the headers
        if plen > 0 and have > 0 then
            t:add(f.payload, tvb(hlen, math.min(have, plen)))
        end
        if pad > 0 and have > plen then
            t:add(f.pad, tvb(hlen + plen, math.min(have - plen, pad)))
        end
        if have >= rem then
            t:add_le(f.icrc, tvb(hlen + plen + pad, ICRC_LEN))
        elseif snapped() then
            t:add_proto_expert_info(ef.not_captured,
                string.format("%d bytes of payload, pad and ICRC not captured", rem - have))
            info[#info + 1] = "(payload not captured)"
        else
            malformed(info, t, string.format("truncated: %d bytes missing", rem - have))
        end
    end
    set_info(pinfo, info)
    return tvb:len()
end

-- Take UDP port 4791, keeping the dissector that had it for other opcodes,
-- and offer MRC in "Decode As" for other ports.
local udp_port = DissectorTable.get("udp.port")
roce = udp_port:get_dissector(MRC_UDP_PORT)
udp_port:add(MRC_UDP_PORT, mrc)
udp_port:add_for_decode_as(mrc)
