package sqlstore

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Secrets payd must be able to read back (merchants' signature keys, which
// sign callbacks, and stored idempotent responses that may carry one) are
// sealed with AES-256-GCM under the operator's key (PAYD_SECRET_KEY) before
// they reach the database. A sealed value is "enc1:" + Base64(nonce ‖
// ciphertext ‖ tag). A value without the prefix was written before sealing
// existed; it is read as it is and sealed by SealLegacy (serve runs it).

const sealedPrefix = "enc1:"

// ErrNoSecretKey is returned when a secret must be sealed or opened and no
// operator key was given.
var ErrNoSecretKey = errors.New("no secret key: set PAYD_SECRET_KEY or PAYD_SECRET_KEY_FILE")

type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("the secret key must be 32 bytes, not %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(plain string) string {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	return sealedPrefix + base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(plain), nil))
}

func (s *sealer) open(v string) (string, error) {
	raw, ok := strings.CutPrefix(v, sealedPrefix)
	if !ok {
		return v, nil // written before sealing existed
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(b) < s.aead.NonceSize()+s.aead.Overhead() {
		return "", errors.New("sealed value is malformed")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return "", errors.New("sealed value does not open with this secret key (wrong PAYD_SECRET_KEY?)")
	}
	return string(plain), nil
}

// SetSecretKey gives the store the operator's 32-byte key.
func (s *Store) SetSecretKey(key []byte) error {
	sl, err := newSealer(key)
	if err != nil {
		return err
	}
	s.sealer = sl
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("payd tags"))
	s.tagKey = mac.Sum(nil)
	return nil
}

// Tag is an HMAC-SHA256 of parts under a key derived from the operator's
// key, for purpose: a value every instance of the deployment can make and
// check, and nobody else can (the console's form tokens). Without an
// operator key it is a keyed hash under a per-process random key.
func (s *Store) Tag(purpose string, parts ...string) string {
	key := s.tagKey
	if key == nil {
		key = processTagKey
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(purpose))
	for _, p := range parts {
		mac.Write([]byte{0})
		mac.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

var processTagKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

func (s *Store) seal(plain string) (string, error) {
	if s.sealer == nil {
		return "", ErrNoSecretKey
	}
	return s.sealer.seal(plain), nil
}

func (s *Store) open(v string) (string, error) {
	if !strings.HasPrefix(v, sealedPrefix) {
		return v, nil
	}
	if s.sealer == nil {
		return "", ErrNoSecretKey
	}
	return s.sealer.open(v)
}

// LoadSecretKey finds the operator's key: keyB64 (PAYD_SECRET_KEY, 32
// bytes in Base64), else the file keyFile (PAYD_SECRET_KEY_FILE, holding
// the Base64 text), else, when create is set and dbURL is a SQLite file, the
// key file beside the database ("PATH.key"), made on first use. created is
// that file's path when this call made it.
func LoadSecretKey(dbURL, keyB64, keyFile string, create bool) (key []byte, created string, err error) {
	decode := func(s, from string) ([]byte, error) {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("%s must hold 32 bytes in Base64 (e.g. from: head -c 32 /dev/urandom | base64)", from)
		}
		return k, nil
	}
	switch {
	case keyB64 != "":
		k, err := decode(keyB64, "PAYD_SECRET_KEY")
		return k, "", err
	case keyFile != "":
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, "", fmt.Errorf("PAYD_SECRET_KEY_FILE: %w", err)
		}
		k, err := decode(string(b), "PAYD_SECRET_KEY_FILE "+keyFile)
		return k, "", err
	}
	path, isSQLite := SQLitePath(dbURL)
	if !create || !isSQLite {
		return nil, "", ErrNoSecretKey
	}
	db := path
	path = KeyFile(db)
	if b, err := os.ReadFile(path); err == nil {
		k, err := decode(string(b), "the key file "+path)
		return k, "", err
	}
	// A new key opens nothing that is already sealed: a database restored
	// without its key file must not start with a fresh one.
	if sealed, err := holdsSealedValues(db); err != nil {
		return nil, "", err
	} else if sealed {
		return nil, "", fmt.Errorf("the database %s holds signature keys sealed under an operator key, but its key file %s is missing: "+
			"put back the key file saved with it (payd backup writes it beside the copy as COPY.key), or give the key in PAYD_SECRET_KEY_FILE; "+
			"payd will not make a new key for sealed data", db, path)
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process made it first
		return LoadSecretKey(dbURL, "", path, false)
	}
	if err != nil {
		return nil, "", err
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return k, path, err
}

// KeyFile is where the sandbox keeps the operator key of the SQLite
// database at path when none is configured: beside it, as path.key.
func KeyFile(path string) string { return path + ".key" }

// holdsSealedValues reports whether the SQLite database at path exists and
// holds a sealed value.
func holdsSealedValues(path string) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	db, err := sql.Open("sqlite", SQLiteDSN(path, "mode=ro&_pragma=busy_timeout(10000)"))
	if err != nil {
		return false, err
	}
	defer db.Close()
	var n int
	err = db.QueryRow("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'merchants'").Scan(&n)
	if err != nil || n == 0 {
		return false, err
	}
	err = db.QueryRow("SELECT COUNT(*) FROM merchants WHERE signature_key LIKE '" + sealedPrefix + "%'").Scan(&n)
	return n > 0, err
}

// CheckSecretKey makes sure the store's key opens the values already
// sealed in the database (one is enough: they are all sealed under one
// key), so that payd refuses to start with the wrong key instead of
// failing on every merchant it reads.
func (s *Store) CheckSecretKey(ctx context.Context) error {
	var v string
	err := s.queryRow(ctx, "SELECT signature_key FROM merchants WHERE signature_key LIKE '"+sealedPrefix+"%' LIMIT 1").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := s.open(v); err != nil {
		return fmt.Errorf("the operator key does not open this database's sealed signature keys: it is not the key they were sealed with "+
			"(restore the database with the key file saved beside it, or set PAYD_SECRET_KEY to that key): %w", err)
	}
	return nil
}

// SealLegacy seals the signature keys and stored responses written before
// sealing existed. It returns how many values it sealed.
func (s *Store) SealLegacy(ctx context.Context) (int, error) {
	return s.reseal(ctx, nil)
}

// RotateSecretKey re-seals every sealed value, opened with old, under the
// store's (new) key, in one transaction. It returns how many values it
// re-sealed.
func (s *Store) RotateSecretKey(ctx context.Context, old []byte) (int, error) {
	o, err := newSealer(old)
	if err != nil {
		return 0, err
	}
	return s.reseal(ctx, o)
}

// reseal rewrites every secret value: plain ones are sealed; sealed ones
// are opened with old (when given) and sealed again.
func (s *Store) reseal(ctx context.Context, old *sealer) (int, error) {
	if s.sealer == nil {
		return 0, ErrNoSecretKey
	}
	n := 0
	err := s.soloTx(ctx, func(t *tx) error {
		for _, tbl := range []struct{ q, upd string }{
			{"SELECT id, signature_key FROM merchants", "UPDATE merchants SET signature_key = ? WHERE id = ?"},
			{"SELECT merchant_id || ' ' || key, response FROM idempotency_keys WHERE response IS NOT NULL",
				"UPDATE idempotency_keys SET response = ? WHERE merchant_id || ' ' || key = ?"},
		} {
			rows, err := t.query(ctx, tbl.q)
			if err != nil {
				return err
			}
			type row struct{ id, v string }
			var all []row
			for rows.Next() {
				var r row
				if err := rows.Scan(&r.id, &r.v); err != nil {
					rows.Close()
					return err
				}
				all = append(all, r)
			}
			rows.Close()
			for _, r := range all {
				sealed := strings.HasPrefix(r.v, sealedPrefix)
				if sealed && old == nil {
					continue
				}
				plain := r.v
				if sealed {
					var err error
					if plain, err = old.open(r.v); err != nil {
						return fmt.Errorf("the old key does not open a stored secret: %w", err)
					}
				}
				if _, err := t.exec(ctx, tbl.upd, s.sealer.seal(plain), r.id); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	return n, err
}
