package httpapi

import (
	"io"
	"log/slog"
	"net/http"
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

// BenchmarkRTPGetHandler is payd's own work for GET /v2/rtp/{id} on SQLite
// (rtp-get without the network): the access log and metrics, the cached
// authentication, the RTP cache's read and the response; the access line
// written by slog's text handler or by AccessLog (as payd serve does).
// go test -run '^$' -bench RTPGetHandler -benchmem ./internal/httpapi/
func BenchmarkRTPGetHandler(b *testing.B) {
	for _, access := range []string{"slog", "accesslog"} {
		b.Run(access, func(b *testing.B) {
			s, _ := storetest.SQLite(b)
			cfg := testConfig()
			if access == "accesslog" {
				cfg.AccessLog = NewAccessLog(io.Discard, false)
			}
			e := newEnv(b, s, cfg)
			listening := make(chan struct{}, 1)
			go s.ListenAuth(b.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)), func() {
				select {
				case listening <- struct{}{}:
				default:
				}
			})
			<-listening
			id := e.createRTP(nil)
			req := httptest.NewRequest("GET", "/v2/rtp/"+id, nil)
			req.Header.Set("Authorization", "Bearer "+e.token)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				e.api.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}
