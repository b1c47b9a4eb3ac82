package payd

import (
	"testing"
	"time"
)

func BenchmarkSignature(b *testing.B) {
	r := &RTP{ID: "123e4567-e89b-12d3-a456-426614174000", OrderID: "123"}
	p := &Payment{ID: "c56a4180-65aa-42ec-a945-5fd21dec0538", Amount: 10000, Commission: 100, Currency: "MDL",
		SenderName: "John D.", SenderIBAN: "MD24AG000225100014156789", ExecutedAt: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		RTPAcceptedFields(r, p).Body("8508706b-3454-4733-8295-56e617c4abcf")
	}
}

func BenchmarkHMAC(b *testing.B) {
	body := []byte(`{"checkoutId":"5a4d27a4-79f5-426b-9403-cccdeee81747","amount":1234.56,"currency":"MDL","paymentStatus":"Executed"}`)
	b.ReportAllocs()
	for b.Loop() {
		HMACSignature("67be8e54-ac28-485d-9369-27f6d3c55a27", body, 1761032516817)
	}
}

func BenchmarkParseMoney(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ParseMoney("12345.67")
	}
}

func BenchmarkFormatMoney(b *testing.B) {
	buf := make([]byte, 0, 32)
	b.ReportAllocs()
	for b.Loop() {
		buf = Money(1234567).AppendText(buf[:0])
	}
}

func BenchmarkParseTime(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ParseTime("2026-03-01T12:15:30.123+02:00")
	}
}
