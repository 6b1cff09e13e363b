package wire

import "testing"

var goldenEPReq = EPRequest{
	NextHdr: 0x02, Op: EPEVProbe, PortStatusMask: 0x0F,
	TS: TSETH{TxTimestamp: 0x2468, TSR: true, FType: TSETHFType},
}

var goldenEPResp = EPResponse{
	NextHdr: 0x03, Resv1: 0x40, Op: EPEVProbe, PortStatusMask: 0xFF, ReqID: 0x42,
	Resv10: [18]byte{17: 0x99}, TxTimestamp: 0x2468, Resv30: [6]byte{5: 1},
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
		0xD0,       // next_hdr[0]=1 (b7) | resv=1 (b6) | op=01 EV_PROBE (b5-4) | resv=0
		0x00, 0x00, // resv
		0x00, 0x00, 0x00, 0xFF, // our choice: port_status_mask
		0x00, 0x42, // our choice: request id
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99, // resv bytes 10-27
		0x24, 0x68, // tx_timestamp echoed
		0, 0, 0, 0, 0, 1, // resv bytes 30-35
	})
}

func TestEndpointOpString(t *testing.T) {
	if EPPortStatusUpdate.String() != "PORT_STATUS_UPDATE" || EPEVProbe.String() != "EV_PROBE" ||
		EndpointOp(3).String() != "EndpointOp(3)" {
		t.Error("EndpointOp.String")
	}
}

func FuzzEPRequest(f *testing.F)  { fuzzCodec(f, goldenEPReq) }
func FuzzEPResponse(f *testing.F) { fuzzCodec(f, goldenEPResp) }
