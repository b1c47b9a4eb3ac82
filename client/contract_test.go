package client_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"payd"
	"payd/callback"
	"payd/client"
)

// TestClientMatchesTheContract: every record and request the client
// declares has exactly the fields of its schema in api/openapi.yaml, the
// contract the server is checked against: a field the server sends is
// one a client user can read, and the client sends nothing the contract
// does not have. (The client's types are generated from the contract,
// package wire; this holds the generator's mapping to it: the spec's
// x-go-type annotations, the names.) The callback package's event types are held
// to the callback bodies' schemas the same way, the schemas payd's own
// callbacks are checked against (TestCallbackBodiesMatchTheContract), so
// the callback bodies have one copy, the contract. Each field's Go type
// must hold its schema's JSON type (an amount, not an integer; a string or
// a time for a string).
func TestClientMatchesTheContract(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for schemas, v := range map[string]any{
		"RTP": client.RTP{}, "RTPCreate": client.RTPRequest{}, "QR": client.QR{}, "QRCreate": client.QRRequest{},
		"QRCreated": client.QRCreated{}, "HybridCreated": client.HybridCreated{}, "QRCancelled": client.QRCancelled{},
		"RTPRefundRequest": client.RTPRefund{}, "RefundCreatedResult": client.RefundCreated{}, "ClockResult": client.Clock{},
		"TestPayResult": client.TestPayment{}, "Extension": client.Extension{}, "ExtensionCreate": client.ExtensionRequest{},
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
		typ := reflect.TypeOf(v)
		types := map[string]reflect.Type{}
		jsonTypes(typ, types)
		got := map[string]bool{}
		for n := range types {
			got[n] = true
		}
		for _, schema := range strings.Fields(schemas) {
			name, member, _ := strings.Cut(schema, ".")
			ref := doc.Components.Schemas[name]
			if member != "" {
				ref = ref.Value.Properties[member]
			}
			for n, prop := range ref.Value.Properties {
				ft, ok := types[n]
				if !ok {
					ft, ok = types[strings.ToLower(n[:1])+n[1:]]
				}
				if want := schemaType(prop); ok && !holds(want, ft) {
					t.Errorf("%s.%s is a %s, which cannot hold the contract's %s (%s)", typ, n, ft, want, schema)
				}
			}
		}
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

// jsonTypes adds the Go type of each of typ's JSON fields to types,
// through embedded structs as encoding/json does.
func jsonTypes(typ reflect.Type, types map[string]reflect.Type) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			jsonTypes(f.Type, types)
		case name != "" && name != "-":
			types[name] = f.Type
		}
	}
}

// schemaType is a property's JSON type: its own, or that of the one
// schema it is all of ("" when it has none).
func schemaType(ref *openapi3.SchemaRef) string {
	for ref != nil && ref.Value != nil {
		if ts := ref.Value.Type.Slice(); len(ts) > 0 {
			return ts[0]
		}
		if len(ref.Value.AllOf) != 1 {
			return ""
		}
		ref = ref.Value.AllOf[0]
	}
	return ""
}

var (
	timeType  = reflect.TypeFor[time.Time]()
	moneyType = reflect.TypeFor[payd.Money]()
	qtyType   = reflect.TypeFor[payd.Quantity]()
)

// holds reports whether a Go field of type t decodes a JSON value of the
// contract's type want: a number into an amount or a float (not an
// integer, which refuses 50.5), a datetime's string into time.Time.
func holds(want string, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface {
		return true
	}
	switch want {
	case "string":
		return t.Kind() == reflect.String || t == timeType
	case "number":
		return t == moneyType || t == qtyType || t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32
	case "integer":
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
			return t != moneyType
		}
		return false
	case "boolean":
		return t.Kind() == reflect.Bool
	case "object":
		return t.Kind() == reflect.Map || t.Kind() == reflect.Struct && t != timeType
	case "array":
		return t.Kind() == reflect.Slice
	}
	return true
}
