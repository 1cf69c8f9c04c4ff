package server

import "github.com/stompgate/stompgate/broker"

// transaction is one open STOMP transaction: the SENDs it holds until
// COMMIT or ABORT. Owned by the reader goroutine.
type transaction struct {
	msgs  []*broker.Message
	bytes int // sum of msgs' MemSize, also counted in session.txBytes
}

// endTransaction removes the open transaction name (validate checked that
// it is open) and returns it.
func (s *session) endTransaction(name string) *transaction {
	tx := s.txs[name]
	delete(s.txs, name)
	s.txBytes -= tx.bytes
	return tx
}

// discardTransactions settles the SENDs of every transaction still open
// when the session ends: counted as dropped, never published.
func (s *session) discardTransactions() {
	for name := range s.txs {
		tx := s.endTransaction(name)
		s.srv.cfg.Chain.Discard(&s.st, len(tx.msgs))
	}
}
