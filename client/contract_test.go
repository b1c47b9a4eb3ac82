package client_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"payd/callback"
	"payd/client"
)

// TestClientMatchesTheContract: every record and request the client
// declares has exactly the fields of its schema in api/openapi.yaml, the
// contract the server is checked against: a field the server sends is
// one a client user can read, and the client sends nothing the contract
// does not have. (The client's types are written by hand; this is what
// keeps them from drifting.) The callback package's event types are held
// to the callback bodies' schemas the same way, the schemas payd's own
// callbacks are checked against (TestCallbackBodiesMatchTheContract), so
// the callback bodies have one copy, the contract.
func TestClientMatchesTheContract(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for schemas, v := range map[string]any{
		"RTP": client.RTP{}, "RTPCreate": client.RTPRequest{}, "QR": client.QR{}, "QRCreate": client.QRRequest{},
		"QRCreated HybridCreated": client.QRCreated{}, "Extension": client.Extension{}, "ExtensionCreate": client.ExtensionRequest{},
		"HybridCreate": client.HybridRequest{}, "QRPayment": client.QRPayment{}, "Checkout": client.Checkout{},
		"CheckoutCreate": client.CheckoutRequest{}, "CheckoutCreated": client.CheckoutCreated{}, "Payment": client.Payment{},
		"Refund": client.Refund{}, "RefundRequest": client.RefundRequest{}, "CallbackItem": client.CallbackItem{},
		"CallbackDetail": client.CallbackDetail{}, "RTPPaymentResult": client.RTPDecision{},
		"QRPaymentCallback.result": callback.QRPayment{}, "RTPAcceptedCallback.result": callback.RTPAccepted{},
		"RefundAcceptedCallback.result": callback.RefundAccepted{}, "CheckoutCallback": callback.Checkout{},
	} {
		want := map[string]bool{}
		for _, schema := range strings.Fields(schemas) { // a type the client uses for two answers: the union
			name, member, _ := strings.Cut(schema, ".") // "QRPaymentCallback.result": a member's schema
			ref := doc.Components.Schemas[name]
			if ref != nil && ref.Value != nil && member != "" {
				ref = ref.Value.Properties[member]
			}
			if ref == nil || ref.Value == nil {
				t.Fatalf("api/openapi.yaml has no schema %s", schema)
			}
			for name := range ref.Value.Properties {
				want[name] = true
			}
		}
		got := map[string]bool{}
		typ := reflect.TypeOf(v)
		jsonNames(typ, got)
		var missing, extra []string
		for n := range want {
			if !got[n] && !got[strings.ToLower(n[:1])+n[1:]] { // "CompletedAt" is read into "completedAt" (encoding/json folds case)
				missing = append(missing, n)
			}
		}
		for n := range got {
			if !want[n] {
				extra = append(extra, n)
			}
		}
		sort.Strings(missing)
		sort.Strings(extra)
		if len(missing)+len(extra) > 0 {
			t.Errorf("%s against %s: lacks %v, has %v the contract does not", typ, schemas, missing, extra)
		}
	}
}

// jsonNames adds the JSON names of typ's fields to names, through embedded
// structs as encoding/json does.
func jsonNames(typ reflect.Type, names map[string]bool) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			jsonNames(f.Type, names)
		case name != "" && name != "-":
			names[name] = true
		}
	}
}
