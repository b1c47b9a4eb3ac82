package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"payd"
)

const merchantCols = `m.id, m.name, m.client_id, m.secret_hash, m.secret_version, m.signature_key,
	m.active, m.commission_bp, m.iban, m.mcc, m.created_at, m.clock_offset_ms`

// scanMerchant reads a merchant row and opens its sealed signature key.
func (s *Store) scanMerchant(sc scanner) (*payd.Merchant, error) {
	m, err := scanMerchantRow(sc)
	if err != nil {
		return nil, err
	}
	if m.SignatureKey, err = s.open(m.SignatureKey); err != nil {
		return nil, fmt.Errorf("merchant %s: %w", m.ID, err)
	}
	return m, nil
}

func scanMerchantRow(sc scanner) (*payd.Merchant, error) {
	var m payd.Merchant
	var active int
	var iban sql.NullString
	var created, offset int64
	if err := sc.Scan(&m.ID, &m.Name, &m.ClientID, &m.SecretHash, &m.SecretVersion, &m.SignatureKey,
		&active, &m.CommissionBP, &iban, &m.MCC, &created, &offset); err != nil {
		return nil, notFound(err)
	}
	m.Active, m.IBAN, m.CreatedAt = active == 1, iban.String, payd.UnixMilli(created)
	m.ClockOffset = time.Duration(offset) * time.Millisecond
	return &m, nil
}

// MerchantOptions are the settings of a new merchant.
type MerchantOptions struct {
	Name         string
	CommissionBP int
	IBAN         string
	MCC          string
}

// CreateMerchant provisions a merchant and returns its credentials; the
// client secret is stored only as a hash and shown only here.
func (s *Store) CreateMerchant(ctx context.Context, o MerchantOptions, now time.Time) (*payd.Credentials, error) {
	if o.MCC == "" {
		o.MCC = "NONE"
	}
	c := &payd.Credentials{
		MerchantID: payd.NewID(now), ClientID: payd.NewID(now),
		ClientSecret: payd.NewSecret(), SignatureKey: payd.NewSecret(),
	}
	sealedKey, err := s.seal(c.SignatureKey)
	if err != nil {
		return nil, fmt.Errorf("create merchant: %w", err)
	}
	err = s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, `INSERT INTO merchants (id, name, client_id, secret_hash, secret_version, signature_key,
			active, commission_bp, iban, mcc, created_at) VALUES (?, ?, ?, ?, 1, ?, 1, ?, ?, ?, ?)`,
			c.MerchantID, o.Name, c.ClientID, payd.HashSecret(c.ClientSecret), sealedKey,
			o.CommissionBP, nullStr(o.IBAN), o.MCC, ms(now))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create merchant: %w", err)
	}
	return c, nil
}

// Merchants lists every merchant, oldest first.
func (s *Store) Merchants(ctx context.Context) ([]*payd.Merchant, error) {
	rows, err := s.query(ctx, "SELECT "+merchantCols+" FROM merchants m ORDER BY m.created_at, m.id")
	if err != nil {
		return nil, fmt.Errorf("list merchants: %w", err)
	}
	return scanAll(rows, s.scanMerchant)
}

// Merchant reads one merchant.
func (s *Store) Merchant(ctx context.Context, id string) (*payd.Merchant, error) {
	return s.scanMerchant(s.queryRow(ctx, "SELECT "+merchantCols+" FROM merchants m WHERE m.id = ?", id))
}

// MerchantByClientID reads the merchant a clientId belongs to.
func (s *Store) MerchantByClientID(ctx context.Context, clientID string) (*payd.Merchant, error) {
	return s.scanMerchant(s.queryRow(ctx, "SELECT "+merchantCols+" FROM merchants m WHERE m.client_id = ?", clientID))
}

// RotateSecret gives the merchant (by merchant id or client id) a new client
// secret. The old secret stops working and every token issued before dies.
func (s *Store) RotateSecret(ctx context.Context, idOrClientID string, now time.Time) (*payd.Credentials, error) {
	secret := payd.NewSecret()
	var c payd.Credentials
	err := s.inTx(ctx, func(t *tx) error {
		err := t.queryRow(ctx, `UPDATE merchants SET secret_hash = ?, secret_version = secret_version + 1
			WHERE id = ? OR client_id = ? RETURNING id, client_id, signature_key`,
			payd.HashSecret(secret), idOrClientID, idOrClientID).Scan(&c.MerchantID, &c.ClientID, &c.SignatureKey)
		if err != nil {
			return notFound(err)
		}
		_, err = t.exec(ctx, "DELETE FROM tokens WHERE merchant_id = ?", c.MerchantID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rotate secret: %w", err)
	}
	s.forgetMerchant(c.MerchantID)
	if c.SignatureKey, err = s.open(c.SignatureKey); err != nil {
		return nil, fmt.Errorf("rotate secret: %w", err)
	}
	c.ClientSecret = secret
	return &c, nil
}

// SetMerchantActive turns a merchant on or off.
func (s *Store) SetMerchantActive(ctx context.Context, id string, active bool) error {
	v := 0
	if active {
		v = 1
	}
	var mid string
	err := s.inTx(ctx, func(t *tx) error {
		return notFound(t.queryRow(ctx, "UPDATE merchants SET active = ? WHERE id = ? OR client_id = ? RETURNING id", v, id, id).Scan(&mid))
	})
	if err == nil {
		s.forgetMerchant(mid)
	}
	return err
}

// IssueToken stores the hash of a new access token for the merchant.
func (s *Store) IssueToken(ctx context.Context, m *payd.Merchant, ttl time.Duration, now time.Time) (string, error) {
	return s.IssuePrefixedToken(ctx, "", m, ttl, now)
}

// IssuePrefixedToken issues a token that starts with prefix (the console's
// session tokens, which the API takes only from the console itself).
func (s *Store) IssuePrefixedToken(ctx context.Context, prefix string, m *payd.Merchant, ttl time.Duration, now time.Time) (string, error) {
	tok := prefix + payd.NewToken()
	err := s.write1(ctx, `INSERT INTO tokens (hash, merchant_id, secret_version, issued_at, expires_at)
		VALUES (?, ?, ?, ?, ?)`, payd.HashSecret(tok), m.ID, m.SecretVersion, ms(now), ms(now.Add(ttl)))
	if err != nil {
		return "", fmt.Errorf("issue token: %w", err)
	}
	return tok, nil
}

// Authenticate returns the merchant an access token acts for, or
// payd.ErrNotFound when the token was never issued, has expired, or was
// revoked by a secret rotation.
func (s *Store) Authenticate(ctx context.Context, token string, now time.Time) (*payd.Merchant, error) {
	hash := payd.HashSecret(token)
	if s.auth == nil {
		return s.authenticate(ctx, hash, now, nil)
	}
	if m, ok := s.auth.get(hash, now); ok {
		return m, nil
	}
	gen, on := s.auth.generation()
	var expires int64
	m, err := s.authenticate(ctx, hash, now, &expires)
	if err == nil && on {
		s.auth.put(hash, m, expires, gen)
	}
	return m, err
}

func (s *Store) authenticate(ctx context.Context, hash string, now time.Time, expires *int64) (*payd.Merchant, error) {
	var exp int64
	m, err := s.scanMerchant(scanWith(s.queryRow(ctx, "SELECT "+merchantCols+`, t.expires_at FROM tokens t JOIN merchants m ON m.id = t.merchant_id
		WHERE t.hash = ? AND t.expires_at > ? AND t.secret_version = m.secret_version`, hash, ms(now)), &exp))
	if expires != nil {
		*expires = exp
	}
	return m, err
}

// DeleteExpiredTokens removes tokens that expired before now.
func (s *Store) DeleteExpiredTokens(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(t *tx) error {
		res, err := t.exec(ctx, "DELETE FROM tokens WHERE expires_at <= ?", ms(now))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		res, err = t.exec(ctx, "DELETE FROM operator_sessions WHERE expires_at <= ?", ms(now))
		if err == nil {
			k, _ := res.RowsAffected()
			n += k
		}
		return err
	})
	return n, err
}

// IssueOperatorSession starts an operator's console session: a token
// beginning with prefix, valid for ttl, stored only as its hash.
func (s *Store) IssueOperatorSession(ctx context.Context, prefix string, ttl time.Duration, now time.Time) (string, error) {
	tok := prefix + payd.NewToken()
	if err := s.write1(ctx, "INSERT INTO operator_sessions (hash, issued_at, expires_at) VALUES (?, ?, ?)",
		payd.HashSecret(tok), ms(now), ms(now.Add(ttl))); err != nil {
		return "", fmt.Errorf("issue operator session: %w", err)
	}
	return tok, nil
}

// OperatorSession reports whether tok is an operator session valid at now.
func (s *Store) OperatorSession(ctx context.Context, tok string, now time.Time) (bool, error) {
	var one int
	err := s.queryRow(ctx, "SELECT 1 FROM operator_sessions WHERE hash = ? AND expires_at > ?", payd.HashSecret(tok), ms(now)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// EndOperatorSession ends an operator's session (sign out).
func (s *Store) EndOperatorSession(ctx context.Context, tok string) error {
	return s.write1(ctx, "DELETE FROM operator_sessions WHERE hash = ?", payd.HashSecret(tok))
}
