package wire

import "testing"

func TestBTH(t *testing.T) {
	checkCodec(t, BTH{
		Opcode: OpWriteOnlyImm, SE: true, PadCnt: 3, PKey: 0xFFFF, Resv8a: 0x40,
		DestQP: 0x123456, AckReq: true, Rtx: true, Resv: 0x41, PSN: 0xABCDEF,
	}, []byte{
		0xCB,       // opcode WRITE_ONLY_IMM
		0xB0,       // SE=1 (b7) | M=0 | PadCnt=3 (b5-4) | TVer=0
		0xFF, 0xFF, // P_Key
		0x40,             // Resv8a: BECN
		0x12, 0x34, 0x56, // DestQP
		0xE1,             // A=1 (b7) | resv b6=1 | Rtx=1 (b5) | TS=0 | resv b3-0=0001
		0xAB, 0xCD, 0xEF, // PSN
	})
	checkCodec(t, BTH{
		Opcode: OpSACK, MigReq: true, PadCnt: 1, TVer: 0xA, PKey: 0x8001,
		DestQP: 2, TS: true, PSN: 0,
	}, []byte{
		0xDC,       // opcode RELIABILITY_SACK
		0x5A,       // SE=0 | M=1 (b6) | PadCnt=1 (b5-4) | TVer=0xA
		0x80, 0x01, // P_Key
		0x00,    // Resv8a
		0, 0, 2, // DestQP
		0x10,    // A=0 | Rtx=0 | TS=1 (b4)
		0, 0, 0, // PSN
	})
}

func TestBTHTruncatesWideFields(t *testing.T) {
	h := BTH{PadCnt: 0xFF, TVer: 0xFF, DestQP: 0xFF123456, Resv: 0xFF, PSN: 0x01ABCDEF}
	var got BTH
	if _, err := got.Decode(h.Append(nil)); err != nil {
		t.Fatal(err)
	}
	want := BTH{PadCnt: 3, TVer: 0xF, DestQP: 0x123456, Resv: BTHResvMask, PSN: 0xABCDEF}
	if got != want {
		t.Errorf("got %+v; want %+v", got, want)
	}
}

func FuzzBTH(f *testing.F) {
	fuzzCodec(f, BTH{Opcode: OpWriteFirst, PKey: PKeyDefault, DestQP: 7, PSN: 9}, BTH{Opcode: OpNACK, SE: true, AckReq: true})
}
