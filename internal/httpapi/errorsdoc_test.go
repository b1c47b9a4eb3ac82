package httpapi

import (
	"os"
	"strings"
	"testing"

	"payd"
)

// TestErrorsDocUpToDate: docs/errors.md is what go generate makes from the
// code tables now; it fails when they drift apart.
func TestErrorsDocUpToDate(t *testing.T) {
	have, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != string(ErrorsMarkdown()) {
		t.Error("docs/errors.md is out of date: run go generate from the module root")
	}
	for _, code := range payd.Codes() {
		if !strings.Contains(string(have), "| `"+code+"` |") {
			t.Errorf("docs/errors.md lacks %s", code)
		}
	}
}
