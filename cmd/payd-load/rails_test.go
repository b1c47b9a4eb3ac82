package main

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"payd"
	"payd/internal/rails/iso20022"
)

// TestSink: the connector payd-load plays takes a signed pain.013 and
// records its RTP's arrival once per arrival, and refuses an unsigned or
// mis-signed message with 401 without recording it.
func TestSink(t *testing.T) {
	body, err := os.ReadFile("../../internal/rails/iso20022/testdata/pain013.xml")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	railsKey = "sink-test-key-0123456"
	defer func() { railsKey = "" }()
	if err := startSink(addr); err != nil {
		t.Fatal(err)
	}
	post := func(key string, body []byte) int {
		req, _ := http.NewRequest("POST", "http://"+addr+"/iso20022", bytes.NewReader(body))
		if key != "" {
			iso20022.Sign(req.Header, key, body, time.Now())
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("", body); got != http.StatusUnauthorized {
		t.Errorf("unsigned: %d, want 401", got)
	}
	if got := post("another-key-0123456789", body); got != http.StatusUnauthorized {
		t.Errorf("mis-signed: %d, want 401", got)
	}
	if got := post(railsKey, body); got != http.StatusOK {
		t.Errorf("signed: %d, want 200", got)
	}
	camt, err := os.ReadFile("../../internal/rails/iso20022/testdata/camt055.xml")
	if err != nil {
		t.Fatal(err)
	}
	if got := post(railsKey, camt); got != http.StatusOK {
		t.Errorf("a camt.055: %d, want 200", got)
	}
	rtp := payd.NormalizeRef("01a1fd3856fa7f9dba9b1038a64df001")
	sink.mu.Lock()
	_, arrived := sink.arrived[rtp]
	n, dups := len(sink.arrived), sink.dups
	sink.mu.Unlock()
	if !arrived || n != 1 || dups != 0 {
		t.Fatalf("arrived %v (%d RTPs, %d twice), want the pain.013's RTP once", arrived, n, dups)
	}
	post(railsKey, body)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.dups != 1 {
		t.Fatalf("a second arrival counted %d times twice, want 1", sink.dups)
	}
}
