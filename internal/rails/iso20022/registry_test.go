package iso20022

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"payd"
)

// TestRegistryDocExamples: the registration and the answer docs/rails.md
// shows are what payd writes and reads: each decodes with no field payd
// does not have, the registration is what RenderRegistration writes for
// its record (same fields, same values), and its link, reference and
// context follow from its ids as payd makes them.
func TestRegistryDocExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "rails.md"))
	if err != nil {
		t.Fatal(err)
	}
	var reg *RegistryMessage
	var answer *RegistryAnswer
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		d := json.NewDecoder(strings.NewReader(m[1]))
		d.DisallowUnknownFields()
		switch {
		case strings.Contains(m[1], `"type": "mia.qr.register"`):
			reg = &RegistryMessage{}
			if err := d.Decode(reg); err != nil {
				t.Fatalf("the registration example: %v", err)
			}
		case strings.Contains(m[1], `"status": "registered"`):
			answer = &RegistryAnswer{}
			if err := d.Decode(answer); err != nil {
				t.Fatalf("the answer example: %v", err)
			}
		}
	}
	if reg == nil || answer == nil {
		t.Fatal("docs/rails.md shows no registration or no answer")
	}
	q := reg.QR
	x := q.Extension
	if want := payd.MIALink("PAY", &payd.QR{ID: q.QRID}); q.Link != want || answer.Link != want || answer.MsgID != reg.MsgID {
		t.Errorf("links %s / %s, want %s", q.Link, answer.Link, want)
	}
	if x == nil || x.CreditorRef != ID(x.ExtensionID) || q.PmtContext != payd.ContextMobile {
		t.Errorf("the example's terms: %+v", x)
	}
	// payd's own rendering of that record has the same fields and values.
	at, _ := time.Parse(time.RFC3339Nano, reg.CreatedAt)
	o := &payd.RailsOrder{ID: reg.MsgID[:8] + "-" + reg.MsgID[8:12] + "-" + reg.MsgID[12:16] + "-" + reg.MsgID[16:20] + "-" + reg.MsgID[20:],
		Kind: payd.OrderRegisterQR, ObjectID: q.QRID, CreatedAt: at, Data: payd.OrderData{QR: &q}}
	body, err := RenderRegistration(o)
	if err != nil {
		t.Fatal(err)
	}
	var mine, theirs map[string]any
	json.Unmarshal(body, &mine)
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[1], `"type": "mia.qr.register"`) {
			json.Unmarshal([]byte(m[1]), &theirs)
		}
	}
	a, _ := json.Marshal(mine)
	b, _ := json.Marshal(theirs)
	if !bytes.Equal(a, b) {
		t.Errorf("payd writes\n%s\nthe page shows\n%s", a, b)
	}
}
