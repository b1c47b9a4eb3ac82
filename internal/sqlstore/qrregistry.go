package sqlstore

import (
	"context"
	"fmt"
	"time"

	"payd"
)

// The QR registry (payd/qrregistry.go): in production every change of what
// a payer's bank reads of a QR (its creation, an extension added, replaced
// or cancelled, a cancel, a payment that ends it, its expiry or
// inactivity) writes a registry order in the change's own transaction,
// with the code's next revision, so the registry learns the code's terms
// exactly as payd holds them, in order, however the orders are delivered.

// SetQRRegistry makes every QR's changes go to the QR registry, its links
// under the PSP's code psp ("": none, as in the sandbox). Set before use.
func (s *Store) SetQRRegistry(psp string) { s.registryPSP = psp }

// QRRegistry is the PSP code of the registry's links, "" when there is none.
func (s *Store) QRRegistry() string { return s.registryPSP }

// registerQR writes the registry order of q (as saved) when what the
// registry knows of it changes: before is q as it was stored (nil for a
// new QR). Nothing without a registry.
func (t *tx) registerQR(ctx context.Context, before, q *payd.QR, now time.Time) error {
	psp := t.s.registryPSP
	if psp == "" {
		return nil
	}
	// The code's own terms first, with no merchant: most changes (a
	// Static QR's payment) change nothing the registry keeps.
	if before != nil && payd.RegistrationOf(psp, &payd.Merchant{}, before).Same(payd.RegistrationOf(psp, &payd.Merchant{}, q)) {
		return nil
	}
	m, err := t.merchant(ctx, q.MerchantID)
	if err != nil {
		return fmt.Errorf("register qr %s: %w", q.ID, err)
	}
	reg := payd.RegistrationOf(psp, m, q)
	if err := t.queryRow(ctx, "UPDATE qrs SET registry_rev = registry_rev + 1 WHERE id = ? RETURNING registry_rev", q.ID).Scan(&reg.Revision); err != nil {
		return fmt.Errorf("register qr %s: %w", q.ID, err)
	}
	return t.insertOrder(ctx, payd.RegistryOrder(m, reg, now))
}

// registerMoved writes the registry orders of QRs a pass moved (their ids;
// an extension's QR by the extension's id when byExtension).
func (t *tx) registerMoved(ctx context.Context, ids []string, byExtension bool, now time.Time) error {
	if t.s.registryPSP == "" {
		return nil
	}
	for _, id := range ids {
		q := "SELECT " + qrCols + qrFrom + " WHERE q.id = ?"
		if byExtension {
			q = "SELECT " + qrCols + qrFrom + " WHERE q.id = (SELECT qr_id FROM qr_extensions WHERE id = ?)"
		}
		qr, err := scanQR(t.queryRow(ctx, q, id))
		if err != nil {
			return fmt.Errorf("register moved qr %s: %w", id, err)
		}
		if err := t.registerQR(ctx, nil, qr, now); err != nil {
			return err
		}
	}
	return nil
}
