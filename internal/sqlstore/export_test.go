package sqlstore

// CoalescedStatements is how many statements have served RTP reads by id
// on PostgreSQL (coalesce.go).
func (s *Store) CoalescedStatements() int64 { return s.rtps.statements.Load() }

// PreparedWrites is the text of every write statement SQLite keeps
// prepared (stmt.go).
func (s *Store) PreparedWrites() []string {
	s.wstmts.mu.Lock()
	defer s.wstmts.mu.Unlock()
	var out []string
	for q, st := range s.wstmts.m {
		if st != nil {
			out = append(out, q)
		}
	}
	return out
}
