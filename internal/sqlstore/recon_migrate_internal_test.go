package sqlstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"payd"
)

// TestReconMigrationKeepsStatements: statements taken before the
// reconciliation's tables were reshaped are still there after: their
// documents (a MsgId taken before is still taken), the days they closed
// and each booking with its outcome and item.
func TestReconMigrationKeepsStatements(t *testing.T) {
	bare := map[string]func(*testing.T) *Store{"sqlite": openSQLiteBare, "postgres": openPostgresBare}
	for name, open := range bare {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
			ms, err := s.migrations()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.w.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			conn, err := s.w.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if strings.Contains(m.name, "recon_statements") {
					break
				}
				if err := s.apply(ctx, conn, m, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			conn.Close()
			insertMerchants(t, s, []string{"m1"})
			acct := "MD24AG000225100013104168"
			for _, q := range []string{
				"UPDATE merchants SET iban = '" + acct + "'",
				`INSERT INTO statements (msg_id, kind, source, created_at, received_at) VALUES ('OLD1', 'camt.053', 'rails', 0, 0)`,
				`INSERT INTO statement_reports VALUES ('OLD1', 'ST1', '` + acct + `', 1, '2026-11-20', '2026-11-20', 1)`,
				`INSERT INTO statement_entries (id, msg_id, account, booking_date, direction, amount, currency, entry_ref, bank_ref, end_to_end_id,
					tx_id, outcome, received_at) VALUES ('e1', 'OLD1', '` + acct + `', '2026-11-20', 'credit', 4200, 'MDL', NULL, 'B1', NULL, 'TXLOST',
					'missing_in_payd', 0)`,
			} {
				if _, err := s.w.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if _, err := s.Migrate(ctx, time.Now()); err != nil {
				t.Fatal(err)
			}
			rep, err := s.ReconReport(ctx, payd.ReconFilter{From: "2026-11-20", To: "2026-11-20"})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Lines) != 1 || rep.Lines[0].Outcome != payd.ReconMissingInPayd || rep.Lines[0].TxID != "TXLOST" || rep.Lines[0].Amount != 4200 {
				t.Errorf("lines after the migration: %+v", rep.Lines)
			}
			if !rep.Closed() || len(rep.Statements) != 1 || rep.Statements[0].MsgID != "OLD1" {
				t.Errorf("statements %+v, days %+v", rep.Statements, rep.Days)
			}
			again := &payd.Statement{MsgID: "OLD1", Kind: payd.KindCamt053, Page: 1, LastPage: true, EndOfDay: true}
			if got, err := s.ImportStatement(ctx, again, "rails", time.Now()); err != nil || got.Fresh {
				t.Errorf("the old statement sent again: %+v %v", got, err)
			}
		})
	}
}
