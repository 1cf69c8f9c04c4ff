package server

import (
	"fmt"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
)

// transaction is one open STOMP transaction: the SENDs it holds until
// COMMIT or ABORT. Owned by the reader goroutine.
type transaction struct {
	msgs  []*broker.Message
	bytes int // sum of msgs' MemSize, also counted in session.txBytes
}

// begin opens the transaction name (validate checked that it is not
// open) and reports whether the session is ending: a session holds at
// most Config.MaxTransactions open at once.
func (s *session) begin(name, receipt string) (end bool) {
	if len(s.txs) >= s.srv.cfg.MaxTransactions {
		s.protocolError(malformed("too many transactions", fmt.Sprintf("at most %d open transactions per session", s.srv.cfg.MaxTransactions)), receipt)
		return true
	}
	if s.txs == nil {
		s.txs = make(map[string]*transaction)
	}
	s.txs[name] = &transaction{}
	return false
}

// hold keeps m, a SEND in the open transaction name, until its COMMIT or
// ABORT, and reports whether the session is ending: a transaction holds
// at most Config.MaxTransactionFrames SENDs, and the session's open
// transactions at most Config.MaxTransactionBytes.
func (s *session) hold(name string, m *broker.Message, receipt string) (end bool) {
	tx := s.txs[name]
	if len(tx.msgs) >= s.srv.cfg.MaxTransactionFrames {
		s.protocolError(malformed("transaction too large", fmt.Sprintf("at most %d SEND frames per transaction", s.srv.cfg.MaxTransactionFrames)), receipt)
		return true
	}
	size := m.MemSize()
	if s.txBytes+size > s.srv.cfg.MaxTransactionBytes {
		s.protocolError(malformed("transaction too large", fmt.Sprintf("at most %d bytes held in open transactions per session", s.srv.cfg.MaxTransactionBytes)), receipt)
		return true
	}
	tx.msgs = append(tx.msgs, m)
	tx.bytes += size
	s.txBytes += size
	return false
}

// commit ends the open transaction name and publishes its SENDs, in
// order, as the chain allows them all at once (a COMMIT never releases a
// burst past the send limit). It reports whether the session is ending,
// and whether the chain dropped the COMMIT, which then gets no RECEIPT.
func (s *session) commit(name, receipt string, now time.Time) (end, dropped bool) {
	tx := s.endTransaction(name)
	cr := s.srv.cfg.Chain.Commit(&s.st, len(tx.msgs), now)
	switch cr.Outcome {
	case interceptor.Drop:
		return false, true
	case interceptor.Reject:
		s.fail(ending{reason: outcome.CloseRateLimitAbuse, kind: cr.Reason.String(), message: cr.Message, detail: cr.Detail, receipt: receipt,
			headers: rejectRetryHeaders(cr.RetryAfter)})
		return true, false
	}
	for _, m := range tx.msgs {
		if s.publish(m, receipt, now) {
			return true, false
		}
	}
	return false, false
}

// abortTransaction ends the open transaction name; its SENDs are counted
// as dropped, never published.
func (s *session) abortTransaction(name string) {
	tx := s.endTransaction(name)
	s.srv.cfg.Chain.Discard(&s.st, len(tx.msgs))
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
		s.abortTransaction(name)
	}
}
