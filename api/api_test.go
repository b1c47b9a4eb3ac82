package api

import "testing"

func TestContractLoadsAndValidates(t *testing.T) {
	doc, err := Doc()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI 3 document: %v", err)
	}
	if doc.Paths.Find("/v2/rtp/{id}") == nil {
		t.Error("contract lacks /v2/rtp/{id}")
	}
	if b, err := JSON(); err != nil || len(b) < 1000 {
		t.Errorf("JSON() = %d bytes, %v", len(b), err)
	}
}
