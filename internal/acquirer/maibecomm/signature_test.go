package maibecomm

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"payd"
)

// A final response as the acquirer's documentation describes it, with the
// shapes that make the algorithm's corners: an amount whose fraction is
// zero (PHP writes 10.00 as "10"), a nested list of more than ten items
// (its indexes sort as text), a null, a boolean.
const callbackFixture = `{"result":{"payId":"f16a9006-128a-46bc-8e2a-77a6ee99df75","orderId":"123","status":"OK","statusCode":"000",
"statusMessage":"Approved","threeDs":"AUTHENTICATED","rrn":"331711380059","approval":"327593","cardNumber":"510218******1124",
"amount":10.00,"currency":"MDL","delivery":1.5,"note":null,"recurring":false,"items":[` + items + `]}}`

const items = `{"id":"1","name":"a","price":1.1,"quantity":1},{"id":"2","name":"b","price":2,"quantity":1},{"id":"3","name":"c","price":3,"quantity":1},
{"id":"4","name":"d","price":4,"quantity":1},{"id":"5","name":"e","price":5,"quantity":1},{"id":"6","name":"f","price":6,"quantity":1},
{"id":"7","name":"g","price":7,"quantity":1},{"id":"8","name":"h","price":8,"quantity":1},{"id":"9","name":"i","price":9,"quantity":1},
{"id":"10","name":"j","price":10.25,"quantity":2},{"id":"11","name":"k","price":11,"quantity":1}`

// signatureByPHP signs the fixture as the documentation's reference code
// does, written here in PHP from its description: keys sorted as strings,
// recursively; values imploded with ':'; the key appended; SHA-256; Base64.
const signatureByPHP = `<?php
function sortRec(array $a) { ksort($a, SORT_STRING); foreach ($a as $k => $v) if (is_array($v)) $a[$k] = sortRec($v); return $a; }
function implodeRec($sep, $arr) { $out = ''; foreach ($arr as $i) $out .= (is_array($i) ? implodeRec($sep, $i) : (string)$i) . $sep; return substr($out, 0, -1); }
$data = json_decode(file_get_contents('php://stdin'), true);
$sorted = sortRec($data['result']);
$sorted[] = $argv[1];
echo base64_encode(hash('sha256', implodeRec(':', $sorted), true));
`

func fixture(t *testing.T) map[string]any {
	t.Helper()
	var body struct{ Result map[string]any }
	d := json.NewDecoder(bytes.NewReader([]byte(callbackFixture)))
	d.UseNumber()
	if err := d.Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Result
}

// TestSignatureAgreesWithReferenceCode: payd's signature of a callback is
// the one the acquirer's reference algorithm (PHP) computes.
func TestSignatureAgreesWithReferenceCode(t *testing.T) {
	const key = "8508706b-3454-4733-8295-56e617c4abcf"
	got := Sign(fixture(t), key)
	if _, err := exec.LookPath("php"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("php is required under CI (.ci/run installs it)")
		}
		t.Skip("php is not installed: the reference algorithm is not run")
	}
	cmd := exec.Command("php", "-r", signatureByPHP[len("<?php\n"):], "--", key)
	cmd.Stdin = bytes.NewReader([]byte(callbackFixture))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("php: %v\n%s", err, out)
	}
	if string(out) != got {
		t.Errorf("payd signs %s, the reference code %s", got, out)
	}
	if !Verify(fixture(t), got, key) {
		t.Error("Verify refused the signature Sign made")
	}
	altered := fixture(t)
	altered["amount"] = json.Number("100.00")
	if Verify(altered, got, key) || Verify(fixture(t), got, "another-key") {
		t.Error("Verify took an altered result or another key")
	}
}

func TestMaskNeverKeepsANumber(t *testing.T) {
	for in, want := range map[string]string{
		"510218******1124":    "510218******1124",
		"4111111111111111":    "411111******1111",
		"4111 1111 1111 1111": "4111 11** **** 1111",
		// Full-width digits (U+FF10…) are digits too.
		"４１１１１１１１１１１１１１１１": "４１１１１１******１１１１",
		"4111１１１１11111111": "4111１１******1111",
		"":                 "",
	} {
		if got := mask(in); got != want {
			t.Errorf("mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOutcomeOfPayInfo(t *testing.T) {
	for status, want := range map[string]payd.CardState{"OK": payd.CardApproved, "REVERSED": payd.CardReturned, "DECLINED": payd.CardDeclined,
		"FAILED": payd.CardDeclined, "TIMEOUT": payd.CardTimedOut, "CREATED": payd.CardPending, "PENDING": payd.CardPending} {
		o, err := outcome("p1", payInfo{PayID: "p1", Status: status, Amount: "12.50", Currency: "MDL", RRN: "331711380059", Approval: "327593"})
		if err != nil || o.State != want || o.Result.Reference != "p1" || *o.Result.Amount != 1250 {
			t.Errorf("%s: %+v %v", status, o, err)
		}
		if o.Result.Approved != (want == payd.CardApproved) || (o.Result.ApprovalCode != "") != (want == payd.CardApproved) {
			t.Errorf("%s: approved %v, approval %q", status, o.Result.Approved, o.Result.ApprovalCode)
		}
	}
	if _, err := outcome("p1", payInfo{Status: "SOMETHING"}); err == nil {
		t.Error("an unknown status was read")
	}
	// An amount missing or unreadable is unknown, never trusted nor an error
	// that would leave the session unresolved.
	for _, amount := range []string{"", "12,50", "abc", "12.505"} {
		o, err := outcome("p1", payInfo{PayID: "p1", Status: "OK", Amount: json.Number(amount), Currency: "MDL"})
		if err != nil || o.State != payd.CardApproved || o.Result.Amount != nil {
			t.Errorf("amount %q: %+v %v, want approved with no amount", amount, o, err)
		}
	}
}

// TestTakes: the acquirer's minimum and currencies.
func TestTakes(t *testing.T) {
	c := &Client{}
	for _, tc := range []struct {
		amount   payd.Money
		currency string
		want     bool
	}{{99, "MDL", false}, {100, "MDL", true}, {100000, "EUR", true}, {500, "USD", true}, {500, "RON", false}, {1, "MDL", false}} {
		if got := c.Takes(tc.amount, tc.currency); got != tc.want {
			t.Errorf("Takes(%s %s) = %v", tc.amount, tc.currency, got)
		}
	}
}
