package stompframe

// IsClientCommand reports whether cmd is a frame a client may send (STOMP
// 1.2 "Client Frames"); STOMP is the 1.1+ synonym of CONNECT.
func IsClientCommand(cmd string) bool {
	switch cmd {
	case CommandConnect, CommandStomp, CommandSend, CommandSubscribe, CommandUnsubscribe,
		CommandAck, CommandNack, CommandBegin, CommandCommit, CommandAbort, CommandDisconnect:
		return true
	}
	return false
}
