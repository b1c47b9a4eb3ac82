package maibecomm

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"payd/internal/network"
)

func init() {
	network.Register(network.Network{
		Name: Name, Role: network.Cards,
		Settings: []network.Setting{
			{Flag: "acquirer-url", Env: "PAYD_ACQUIRER_URL", Help: "the acquirer API's base URL, e.g. https://api.maibmerchants.md"},
			{Flag: "acquirer-project-id", Env: "PAYD_ACQUIRER_PROJECT_ID", Help: "the acquirer project's id"},
			{Flag: "acquirer-project-secret", Env: "PAYD_ACQUIRER_PROJECT_SECRET", Help: "the acquirer project's secret", Secret: true},
			{Flag: "acquirer-signature-key", Env: "PAYD_ACQUIRER_SIGNATURE_KEY", Help: "the key verifying the acquirer's callbacks", Secret: true},
		},
		Check: check,
		Start: func(h *network.Host) (network.Started, error) {
			v := h.Values
			c := &Client{URL: v["acquirer-url"], ProjectID: v["acquirer-project-id"], ProjectSecret: v["acquirer-project-secret"],
				SignatureKey: v["acquirer-signature-key"], Clock: h.Clock, HTTP: &http.Client{Timeout: 15 * time.Second}}
			h.Mount("POST "+CallbackPath, &Callback{Client: c, Ledger: h.Ledger, Clock: h.Clock, Log: h.Log})
			return network.Started{Orders: c, Gateway: c, CallbackURL: strings.TrimRight(h.PublicURL, "/") + CallbackPath}, nil
		},
	})
}

// check requires the API's URL, the project and its keys.
func check(v network.Values) error {
	u, err := url.Parse(v["acquirer-url"])
	if v["acquirer-url"] == "" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("PAYD_ACQUIRER_URL: the acquirer API's http(s) base URL is required with PAYD_CARD_ACQUIRER=%s", Name)
	}
	for _, s := range []struct{ env, flag string }{{"PAYD_ACQUIRER_PROJECT_ID", "acquirer-project-id"},
		{"PAYD_ACQUIRER_PROJECT_SECRET", "acquirer-project-secret"}, {"PAYD_ACQUIRER_SIGNATURE_KEY", "acquirer-signature-key"}} {
		if v[s.flag] == "" {
			return fmt.Errorf("%s is required with PAYD_CARD_ACQUIRER=%s", s.env, Name)
		}
	}
	return nil
}
