package wire

import "testing"

var goldenEPReq = EPRequest{
	NextHdr: 0x02, Op: EPEVProbe, PortStatusMask: 0x0F,
	TS: TSETH{TxTimestamp: 0x2468, TSR: true, FType: TSETHFType},
}

var goldenEPResp = EPResponse{
	NextHdr: 0x03, Resv1: 0x40, Op: EPEVProbe, PortStatusMask: 0xFF,
	Resv8: [20]byte{1: 0x42, 19: 0x99}, TxTimestamp: 0x2468, Resv30: [6]byte{5: 1},
}

func TestEPRequest(t *testing.T) {
	checkCodec(t, goldenEPReq, []byte{
		0x01,                   // type=0 | next_hdr[4:1]=0b0001
		0x01,                   // next_hdr[0]=0 | resv=0 | op=1 EV_PROBE (b1-0)
		0x00,                   // resv
		0x00,                   // vendor_info
		0x00, 0x00, 0x00, 0x0F, // port_status_mask: ports 1-4 up
		0, 0, 0, 0, // resv
		0x24, 0x68, // tx_timestamp
		0x80, 0x01, // tsr=1 | resv | ftype=1
	})
	checkCodec(t, EPRequest{Type: 0xF, NextHdr: 1, Resv1: 0x7C, Op: EPPortStatusUpdate, Resv2: 1, VendorInfo: 2, Resv8: 0x01020304}, []byte{
		0xF0,       // type=0xF | next_hdr[4:1]=0
		0xFC,       // next_hdr[0]=1 | resv=11111 (b6-2) | op=0 PORT_STATUS_UPDATE
		0x01,       // resv
		0x02,       // vendor_info
		0, 0, 0, 0, // port_status_mask
		0x01, 0x02, 0x03, 0x04, // resv
		0, 0, 0, 0, // tx_timestamp, tsr/resv/ftype
	})
}

func TestEPResponse(t *testing.T) {
	checkCodec(t, goldenEPResp, []byte{
		0x01,       // type=0 | next_hdr[4:1]=0b0001
		0xC1,       // next_hdr[0]=1 (b7) | resv=10000 (b6-2) | op=01 EV_PROBE (b1-0, as in the ERTH)
		0x00, 0x00, // resv
		0x00, 0x00, 0x00, 0xFF, // our choice: port_status_mask
		0x00, 0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99, // resv bytes 8-27 (no request id: the timestamp is echoed)
		0x24, 0x68, // tx_timestamp echoed
		0, 0, 0, 0, 0, 1, // resv bytes 30-35
	})
}

// TestEndpointOpPlacement decodes hand-written bytes: both headers carry
// op in byte 1 b1-0, so one reading of the byte works for either.
func TestEndpointOpPlacement(t *testing.T) {
	for _, op := range []EndpointOp{EPPortStatusUpdate, EPEVProbe} {
		req := make([]byte, ERTHLen)
		resp := make([]byte, EETHLen)
		req[1], resp[1] = byte(op), byte(op)
		var r EPRequest
		var e EPResponse
		if _, err := r.Decode(req); err != nil || r.Op != op || r.Resv1 != 0 {
			t.Errorf("ERTH byte 1 = %#02x: op %v resv1 %#x err %v", req[1], r.Op, r.Resv1, err)
		}
		if _, err := e.Decode(resp); err != nil || e.Op != op || e.Resv1 != 0 {
			t.Errorf("EETH byte 1 = %#02x: op %v resv1 %#x err %v", resp[1], e.Op, e.Resv1, err)
		}
	}
}

func TestEndpointOpString(t *testing.T) {
	if EPPortStatusUpdate.String() != "PORT_STATUS_UPDATE" || EPEVProbe.String() != "EV_PROBE" ||
		EndpointOp(3).String() != "EndpointOp(3)" {
		t.Error("EndpointOp.String")
	}
}

func FuzzEPRequest(f *testing.F)  { fuzzCodec(f, goldenEPReq) }
func FuzzEPResponse(f *testing.F) { fuzzCodec(f, goldenEPResp) }
