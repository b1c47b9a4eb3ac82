package iso20022

import (
	"encoding/json"
	"fmt"
	"time"

	"payd"
)

// The QR registry's messages (docs/rails.md, "The QR registry"): payd
// tells the National Bank's QR registry, through the connector, every
// code's terms as a JSON document on the same endpoint and with the same
// signature as its ISO 20022 messages (told apart by its media type). The
// registry answers with the link it keeps for the code.

// RegistryMediaType is the media type of the registry's messages.
const RegistryMediaType = "application/json"

// RegistryType names the registration message.
const RegistryType = "mia.qr.register"

// RegistryMessage is a registration: a message id (the order's, 32 hex
// digits: the registry deduplicates on it) and the code's record.
type RegistryMessage struct {
	Type      string              `json:"type"`
	MsgID     string              `json:"msgId"`
	CreatedAt string              `json:"createdAt"` // ISO 8601 with its offset
	QR        payd.QRRegistration `json:"qr"`
}

// RegistryAnswer is the registry's answer: the link it keeps for the code
// (payd's own, which it must be) and the revision it holds, which is the
// message's or a newer one (Status "stale": a registration that arrived
// after a newer one, kept out).
type RegistryAnswer struct {
	MsgID    string `json:"msgId"`
	Link     string `json:"link"`
	Revision int64  `json:"revision"`
	Status   string `json:"status"` // "registered", "stale"
}

// Registry statuses of an answer.
const (
	RegistryRegistered = "registered"
	RegistryStale      = "stale"
)

// RenderRegistration is a registry order's message.
func RenderRegistration(o *payd.RailsOrder) ([]byte, error) {
	if o.Kind != payd.OrderRegisterQR || o.Data.QR == nil {
		return nil, fmt.Errorf("rails order %s: not a registration", o.ID)
	}
	return json.Marshal(RegistryMessage{Type: RegistryType, MsgID: ID(o.ID), CreatedAt: o.CreatedAt.UTC().Format(time.RFC3339Nano), QR: *o.Data.QR})
}

// checkRegistryAnswer reads the registry's answer to o: it must keep o's
// link. Another link is a refusal for a person (payd's codes are payd's
// ids), never sent again.
func checkRegistryAnswer(o *payd.RailsOrder, body []byte) error {
	var a RegistryAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("the registry's answer to %s is not its JSON: %w", o.ID, err)
	}
	if a.Link != o.Data.QR.Link {
		return fmt.Errorf("%w: the registry keeps %q for QR %s, not payd's link %q", payd.ErrOrderRefused, a.Link, o.ObjectID, o.Data.QR.Link)
	}
	if a.Revision < o.Data.QR.Revision {
		return fmt.Errorf("the registry answered revision %d to revision %d of QR %s", a.Revision, o.Data.QR.Revision, o.ObjectID)
	}
	return nil
}
