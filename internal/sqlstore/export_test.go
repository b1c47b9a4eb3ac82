package sqlstore

// CoalescedStatements is how many statements have served RTP reads by id
// on PostgreSQL (coalesce.go).
func (s *Store) CoalescedStatements() int64 { return s.rtps.statements.Load() }
