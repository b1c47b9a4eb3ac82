package payd

import (
	"strings"
	"testing"
	"time"
)

// TestMIALinks: a QR's link is the registry's shape, under the PSP's
// code, its context e-commerce for a checkout's QR and mobile otherwise,
// and carries the QR's id; two QRs never share one; the sandbox's url is
// payd's page.
func TestMIALinks(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for i := range 1000 {
		q, _ := NewQR(QRInput{Type: "Static", AmountType: "Free", Currency: "MDL"}, "m", now)
		if i%2 == 1 {
			q.CheckoutID = "c"
		}
		link := MIALink("AGR", q)
		ctx, psp, id, ok := ParseMIALink(link)
		want := map[bool]string{false: "m", true: "e"}[i%2 == 1]
		if !ok || psp != "AGR" || id != q.ID || ctx != want || !strings.HasPrefix(link, "https://mia-qr.bnm.md/1/"+want+"/BNM/AGR") {
			t.Fatalf("link %q of %s: %q %q %q %v", link, q.ID, ctx, psp, id, ok)
		}
		if seen[link] {
			t.Fatalf("two QRs share %s", link)
		}
		seen[link] = true
	}
	q, _ := NewQR(QRInput{Type: "Static", AmountType: "Free", Currency: "MDL"}, "m", now)
	if got := QRURL("https://payd.example", "", q); got != "https://payd.example/qr/"+q.ID {
		t.Errorf("the sandbox's url: %s", got)
	}
	for _, bad := range []string{"https://mia-qr.bnm.md/1/x/BNM/AGR313581894ec84c95b61b0b47349ea7e3", "https://mia-qr.bnm.md/1/m/BNM/AG313581894ec84c95b61b0b47349ea7e3",
		"http://mia-qr.bnm.md/1/m/BNM/AGR313581894ec84c95b61b0b47349ea7e3", "https://mia-qr.bnm.md/1/m/BNM/AGR313581894EC84C95B61B0B47349EA7E3"} {
		if _, _, _, ok := ParseMIALink(bad); ok {
			t.Errorf("%s read as a link", bad)
		}
	}
}

// TestRegistrationOf: what the registry is told of each kind of QR: a
// Dynamic's amount and deadline with its own id as the reference, a
// Static's free amount, a Hybrid's current extension as its terms (its
// id the reference), none while it has no extension; a Static QR's
// payment changes nothing the registry keeps, a cancel does.
func TestRegistrationOf(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := &Merchant{ID: "m", Name: "Cafe Codru", IBAN: "md24 ag00 0225 1000 1310 4168"}
	amount := Money(12345)
	hour := now.Add(time.Hour)
	dyn, _ := NewQR(QRInput{Type: "Dynamic", AmountType: "Fixed", Currency: "MDL", Ext: ExtensionInput{Amounts: Amounts{Amount: &amount},
		Description: "Order 7", ExpiresAt: &hour}}, m.ID, now)
	r := RegistrationOf("AGR", m, dyn)
	if r.QRType != QRDynamic || r.AmountType != AmountFixed || r.PmtContext != "m" || r.CreditorAccount.IBAN != "MD24AG000225100013104168" ||
		r.DBA != "Cafe Codru" || r.Extension == nil || *r.Extension.Amount != amount || r.Extension.RemittanceInfo4Payer != "Order 7" ||
		r.Extension.CreditorRef != strings.ReplaceAll(dyn.ID, "-", "") || !r.Extension.ValidUntil.Equal(now.Add(time.Hour)) || r.Status != QRActive {
		t.Errorf("Dynamic: %+v %+v", r, r.Extension)
	}
	st, _ := NewQR(QRInput{Type: "Static", AmountType: "Free", Currency: "MDL", Ext: ExtensionInput{Description: "Tips"}}, m.ID, now)
	before := *st
	st.IdleFrom, st.UpdatedAt = now.Add(time.Minute), now.Add(time.Minute) // paid
	if !RegistrationOf("AGR", m, &before).Same(RegistrationOf("AGR", m, st)) {
		t.Error("a Static QR's payment changed its registration")
	}
	if _, err := st.Cancel(now, "closed"); err != nil {
		t.Fatal(err)
	}
	if after := RegistrationOf("AGR", m, st); after.Same(RegistrationOf("AGR", m, &before)) || after.Status != QRCancelled || after.Extension.ValidUntil != nil {
		t.Errorf("the cancel: %+v", after)
	}
	hy, ext := NewQR(QRInput{Type: "Hybrid", AmountType: "Controlled", Currency: "MDL"}, m.ID, now)
	if r := RegistrationOf("AGR", m, hy); ext != nil || r.Extension != nil || r.QRType != QRHybrid {
		t.Errorf("a Hybrid without an extension: %+v", r)
	}
	lo, hi := Money(100), Money(900)
	day := now.Add(24 * time.Hour)
	x, _, err := hy.Extend(now, ExtensionInput{Amounts: Amounts{Amount: &lo, Min: &lo, Max: &hi}, Description: "Table 4", ExpiresAt: &day})
	if err != nil {
		t.Fatal(err)
	}
	r = RegistrationOf("AGR", m, hy)
	if r.Extension == nil || r.Extension.ExtensionID != x.ID || r.Extension.CreditorRef != strings.ReplaceAll(x.ID, "-", "") ||
		*r.Extension.AmountMin != lo || *r.Extension.AmountMax != hi || r.Extension.Status != ExtActive {
		t.Errorf("a Hybrid's extension: %+v", r.Extension)
	}
	o := RegistryOrder(m, r, now)
	if o.Kind != OrderRegisterQR || o.ObjectID != hy.ID || o.Data.QR.Link != r.Link {
		t.Errorf("order: %+v", o)
	}
}
