package iso20022

import (
	"fmt"
	"net/url"
	"regexp"

	"payd"
	"payd/internal/network"
)

// InboundPath is where the connector posts the network's messages.
const InboundPath = "/rails/iso20022"

var bicRE = regexp.MustCompile(`^[A-Z0-9]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$`)

func init() {
	network.Register(network.Network{
		Name: Name, Role: network.Rails, Needs: "with PAYD_RAILS_URL and PAYD_RAILS_KEY",
		Settings: []network.Setting{
			{Flag: "rails-url", Env: "PAYD_RAILS_URL", Help: "the ISO 20022 connector's URL (iso20022 rails)"},
			{Flag: "rails-key", Env: "PAYD_RAILS_KEY", Help: "the shared secret signing rails messages both ways (iso20022 rails)", Secret: true},
			{Flag: "rails-bic", Env: "PAYD_RAILS_BIC", Help: "the BIC of the operator's bank, the merchants' agent in every rails message (iso20022 rails, required)",
				Parse: func(v string) error {
					if v != "" && !bicRE.MatchString(v) {
						return fmt.Errorf("%q is not a BIC (8 or 11 letters and digits: bank, country, location, branch)", v)
					}
					return nil
				}},
			{Flag: "rails-psp", Env: "PAYD_RAILS_PSP", Help: "the operator's PSP code in the National Bank's QR registry, three capital letters, in every QR's MIA link (iso20022 rails; default: the BIC's first three)",
				Parse: func(v string) error {
					if v != "" && !payd.PSPCodePattern.MatchString(v) {
						return fmt.Errorf("%q is not a PSP code (three capital letters, e.g. AGR)", v)
					}
					return nil
				}},
		},
		Check:      check,
		QRRegistry: func(v network.Values) string { return v["rails-psp"] },
		Start: func(h *network.Host) (network.Started, error) {
			v := h.Values
			h.Mount("POST "+InboundPath, &Inbound{Ledger: h.Ledger, Inbox: h.Inbox, Statements: h.Statements, Location: h.Location,
				Refused: h.StatementRefused, Key: v["rails-key"], BIC: v["rails-bic"], Clock: h.Clock, Log: h.Log})
			return network.Started{Orders: &Rails{URL: v["rails-url"], Key: v["rails-key"], BIC: v["rails-bic"], Clock: h.Clock,
				Client: NewClient(h.Conns)}}, nil
		},
	})
}

// check requires the connector's URL, the shared key and the operator's
// BIC; the QR registry's PSP code defaults to the BIC's first three letters.
func check(v network.Values) error {
	u, err := url.Parse(v["rails-url"])
	if v["rails-url"] == "" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("PAYD_RAILS_URL: the connector's http(s) URL is required with PAYD_RAILS=%s", Name)
	}
	if len(v["rails-key"]) < 16 {
		return fmt.Errorf("PAYD_RAILS_KEY: a shared secret of at least 16 characters is required with PAYD_RAILS=%s", Name)
	}
	bic := v["rails-bic"]
	if bic == "" {
		return fmt.Errorf("PAYD_RAILS_BIC: the BIC of the operator's bank (the merchants' agent in every message) is required with PAYD_RAILS=%s", Name)
	}
	if v["rails-psp"] == "" {
		if v["rails-psp"] = bic[:3]; !payd.PSPCodePattern.MatchString(v["rails-psp"]) {
			return fmt.Errorf("PAYD_RAILS_PSP: the BIC %s does not start with a PSP code (three letters); set the code the QR registry knows", bic)
		}
	}
	return nil
}
