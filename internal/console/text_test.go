package console

import (
	"strings"
	"testing"

	"payd"
)

// TestConsoleTextsComplete: every text the console shows exists in each
// language, and every state a list can show has a label.
func TestConsoleTextsComplete(t *testing.T) {
	for _, gap := range catalog.Gaps() {
		t.Error(gap)
	}
	for _, k := range kinds {
		for _, st := range legend(k) {
			if !catalog.Has("st." + st) {
				t.Errorf("state %s of %s has no label", st, k.name)
			}
			if badges[st] == "" {
				t.Errorf("state %s of %s has no badge", st, k.name)
			}
		}
	}
}

// TestReconTextsComplete: every outcome of the reconciliation has a label
// and a badge, every class of line (what a line that is no payment is, and
// which sum does not hold) a label.
func TestReconTextsComplete(t *testing.T) {
	for _, o := range payd.ReconOutcomes {
		if ok := catalog.Has("st." + o); !ok || badges[o] == "" {
			t.Errorf("outcome %s: label %v, badge %q", o, ok, badges[o])
		}
	}
	for _, c := range []string{payd.ClassFee, payd.ClassCommission, payd.ClassInterest, payd.ClassOwnTransfer, payd.ClassOtherCurrency,
		payd.ClassUnknownAccount, payd.ClassOther, payd.SumBalance, payd.SumBatch, payd.SumSummary} {
		if !catalog.Has("cls." + c) {
			t.Errorf("class %s has no label", c)
		}
	}
}

func TestMoneyPerLanguage(t *testing.T) {
	for _, c := range []struct {
		lang string
		m    payd.Money
		want string
	}{
		{"ro", 124990, "1\u00a0249,90\u00a0MDL"}, {"ru", 50, "0,50\u00a0MDL"}, {"en", 124990, "MDL\u00a01,249.90"},
		{"en", 100000000, "MDL\u00a01,000,000.00"}, {"ro", -1050, "−10,50\u00a0MDL"},
	} {
		if got := money(c.lang, c.m, "MDL"); got != c.want {
			t.Errorf("money(%s, %d) = %q, want %q", c.lang, c.m, got, c.want)
		}
	}
	got := string(when("ro", payd.UnixMilli(1795514400000)))
	if !strings.Contains(got, "nov.") || !strings.Contains(got, `datetime="2026-11-24T10:00:00.000+00:00"`) || !strings.Contains(got, "12:00:00") {
		t.Errorf("when: %s", got)
	}
}
