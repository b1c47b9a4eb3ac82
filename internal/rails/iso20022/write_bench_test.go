package iso20022

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"payd"
)

// BenchmarkRender is the cost of writing each message payd sends or
// answers with, from its order or its recorded credit.
func BenchmarkRender(b *testing.B) {
	orders := testOrders()
	for _, name := range []string{"pain013.xml", "camt055.xml", "pacs004.xml"} {
		o := orders[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render(o, testBIC); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	rec := payd.Message{ID: "CONNECTOR-MSG-0001", Kind: "pacs.008", Outcome: StatusCredited, At: epoch.Add(time.Second)}
	tx := CreditTx{PmtID: PaymentID{EndToEndID: "01a1fd3856fa7f9dba9b1038a64df001", TxID: "BANKTX0001"}}
	b.Run("pacs002.xml", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CreditAnswer(rec, tx, testBIC); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeStrict is the cost of reading each message payd takes
// from the connector (decodeStrict: the schema's check of every element
// and the decoding; ReadStatement for a statement).
func BenchmarkDecodeStrict(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "pacs008.xml"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pacs008.xml", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := decodeStrict(body, &Pacs008{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	stmt, err := os.ReadFile(filepath.Join("testdata", "camt053.xml"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("camt053.xml", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stmt)))
		for b.Loop() {
			if _, err := ReadStatement(stmt, time.UTC); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadBody is the cost of taking an inbound pacs.008's body off
// the request (readBody), before it is checked and decoded.
func BenchmarkReadBody(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "pacs008.xml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := readBody(b.Context(), bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
}
