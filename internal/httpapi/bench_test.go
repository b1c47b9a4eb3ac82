package httpapi

import (
	"net/http/httptest"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore/storetest"
)

func BenchmarkEnvelope(b *testing.B) {
	r := &payd.RTP{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df444", OrderID: "o-1", Amount: 1234, Currency: "MDL", Description: "load",
		Status: payd.RTPActive, CreatedAt: time.Now(), UpdatedAt: time.Now(), ExpiresAt: time.Now()}
	s := &Server{cfg: Config{PublicURL: "http://127.0.0.1:8080"}}
	b.ReportAllocs()
	for b.Loop() {
		respond(httptest.NewRecorder(), s.rtpRecord(r))
	}
}

func BenchmarkDecodeRTPCreate(b *testing.B) {
	body := []byte(`{"alias":"37369112221","amount":50.5,"currency":"MDL","description":"Order 42","orderId":"42","expiresAt":"2026-03-01T11:00:00Z","callbackUrl":"https://m.example/cb"}`)
	now := storetest.Epoch
	b.ReportAllocs()
	for b.Loop() {
		o, _ := parseObject(areaRTP, body, true)
		in := payd.RTPInput{Alias: o.str("alias"), Amount: o.money("amount"), Currency: o.str("currency"), Description: o.str("description"),
			OrderID: o.str("orderId"), CallbackURL: o.str("callbackUrl")}
		in.ExpiresAt, in.ExpiresRaw = o.time("expiresAt")
		if err := in.Validate(now, payd.URLRules{}); err != nil {
			b.Fatal(err)
		}
	}
}
