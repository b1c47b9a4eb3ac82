package payd

import (
	"encoding/json"
	"strings"
	"testing"
)

const goldenKey = "8508706b-3454-4733-8295-56e617c4abcf"

// The vectors of spec/API.md §6.5 and §6.6, byte for byte.
func TestSignatureVectorA(t *testing.T) {
	fs := Fields{
		Str("qrId", "c3108b2f-6c2e-43a2-bdea-123456789012"), Str("extensionId", "3fe7f013-23a6-4d09-a4a4-123456789012"),
		Str("qrStatus", "Paid"), Str("payId", "eb361f48-bb39-45e2-950b-123456789012"), Str("referenceId", "MIA0001234567"),
		Str("orderId", "123"), Amt("amount", 5000), Amt("commission", 10), Str("currency", "MDL"),
		Str("payerName", "TEST QR PAYMENT"), Str("payerIban", "MD88AG000000011621810140"),
		Str("executedAt", "2025-04-18T14:04:11.81145+00:00"), Str("terminalId", ""),
	}
	wantStr := "50.00:0.10:MDL:2025-04-18T14:04:11.81145+00:00:3fe7f013-23a6-4d09-a4a4-123456789012:123:MD88AG000000011621810140:TEST QR PAYMENT:eb361f48-bb39-45e2-950b-123456789012:c3108b2f-6c2e-43a2-bdea-123456789012:Paid:MIA0001234567:" + goldenKey
	if got := fs.SignedString(goldenKey); got != wantStr {
		t.Errorf("signed string\n got %s\nwant %s", got, wantStr)
	}
	if got := fs.Sign(goldenKey); got != "fHM+l4L1ycFWZDRTh/Vr8oybq1Q1xySdjyvmFQCmZ4s=" {
		t.Errorf("signature = %s", got)
	}
	if fs.Sign("another-key") == fs.Sign(goldenKey) {
		t.Error("signature does not depend on the key")
	}
}

func TestSignatureVectorB(t *testing.T) {
	fs := Fields{
		Str("rtpId", "123e4567-e89b-12d3-a456-426614174000"), Str("rtpStatus", "Accepted"), Str("orderId", "123"),
		Str("payId", "c56a4180-65aa-42ec-a945-5fd21dec0538"), Amt("amount", 10000), Amt("commission", 100),
		Str("currency", "MDL"), Str("payerName", "John D."), Str("payerIban", "MD24AG000225100014156789"),
		Str("executedAt", "2029-10-22T10:32:28+03:00"),
	}
	wantStr := "100.00:1.00:MDL:2029-10-22T10:32:28+03:00:123:MD24AG000225100014156789:John D.:c56a4180-65aa-42ec-a945-5fd21dec0538:123e4567-e89b-12d3-a456-426614174000:Accepted:" + goldenKey
	if got := fs.SignedString(goldenKey); got != wantStr {
		t.Errorf("signed string\n got %s\nwant %s", got, wantStr)
	}
	if got := fs.Sign(goldenKey); got != "86dZpDkTqBW+S6PMs690ECTP7k3jTQvtOTDzd8RjuEs=" {
		t.Errorf("signature = %s", got)
	}
	// The body carries the same signature at the top level and the
	// amounts with two decimals.
	var body struct {
		Result    map[string]json.RawMessage `json:"result"`
		Signature string                     `json:"signature"`
	}
	if err := json.Unmarshal(fs.Body(goldenKey), &body); err != nil {
		t.Fatal(err)
	}
	if body.Signature != "86dZpDkTqBW+S6PMs690ECTP7k3jTQvtOTDzd8RjuEs=" || string(body.Result["amount"]) != "100.00" || string(body.Result["commission"]) != "1.00" {
		t.Errorf("body = %s", fs.Body(goldenKey))
	}
}

func TestSignatureVectorC(t *testing.T) {
	fs := Fields{
		Str("refundId", "0b9f6c3e-5d1a-4c8e-9a77-2f4d6e8b1c01"), Str("payId", "eb361f48-bb39-45e2-950b-123456789012"),
		Amt("amount", 2500), Str("currency", "MDL"), Str("status", "Accepted"), Str("refundType", "Partial"),
		Str("executedAt", "2026-03-01T10:15:30.123+00:00"), Str("orderId", "123"),
	}
	wantStr := "25.00:MDL:2026-03-01T10:15:30.123+00:00:123:eb361f48-bb39-45e2-950b-123456789012:0b9f6c3e-5d1a-4c8e-9a77-2f4d6e8b1c01:Partial:Accepted:" + goldenKey
	if got := fs.SignedString(goldenKey); got != wantStr {
		t.Errorf("signed string\n got %s\nwant %s", got, wantStr)
	}
	if got := fs.Sign(goldenKey); got != "WJkDZ4RFXGGvYsSz06i7pDCeqPG710N30LKhfBCoeoQ=" {
		t.Errorf("signature = %s", got)
	}
}

func TestHMACVectors(t *testing.T) {
	if got := HMACSignature("4cde378d-43b6-405f-94aa-55c010d4d42a", []byte("[CALLBACK MESSAGE]"), 1762181943494); got != "yu2OvBe3Gyq1Nz/4R6KO8F3KpGCuW7VhH9yUPhYtNRU=" {
		t.Errorf("H1 = %s", got)
	}
	h2 := `{"checkoutId": "5a4d27a4-79f5-426b-9403-cccdeee81747","terminalId": "T1234567","amount": 1234.56,"currency": "MDL","completedAt": "2024-11-23T19:35:00.6772285+02:00","payerName": "John","payerEmail": "Smith","payerPhone": "37368473653","payerIp": "192.175.12.22","orderId": "ORDER-2025-0001","orderDescription": "Online purchase of electronics","orderDeliveryAmount": 50.00,"orderDeliveryCurrency": "MDL","paymentId": "379b31a3-8283-43d4-8a7b-eef8c0736a32","paymentAmount": 1234.56,"paymentCurrency": "MDL","paymentStatus": "Executed","paymentExecutedAt": "2025-05-05T23:38:07.2760698+03:00","senderIban": "NL43RABO1438227787","senderName": "Steven","senderCardNumber": "444433******1111","retrievalReferenceNumber": "ABC324353245","processingStatus": "OK","processingStatusCode": "00","approvalCode": "123456","threeDsResult": "Y","threeDsReason": null,"paymentMethod": "Card"}`
	if got := HMACSignature("67be8e54-ac28-485d-9369-27f6d3c55a27", []byte(h2), 1761032516817); got != "mtFkCMxfwj9t2wvY/7JASHLw+K/du4mY8azf1lV0ttg=" {
		t.Errorf("H2 = %s", got)
	}
}

// FuzzCompareFold: compareFold orders any two names as their lower-case
// forms compare (the signed string's field order).
func FuzzCompareFold(f *testing.F) {
	for _, p := range [][2]string{{"rtpId", "rtpStatus"}, {"payId", "PAYID"}, {"amount", "amountMin"}, {"Z", "a"},
		{"ÄBC", "äbd"}, {"aΣ", "AΣb"}, {"", "x"}, {"executedAt", "executedat"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		sign := func(n int) int { return min(max(n, -1), 1) }
		if got, want := sign(compareFold(a, b)), strings.Compare(strings.ToLower(a), strings.ToLower(b)); got != want {
			t.Fatalf("compareFold(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}
