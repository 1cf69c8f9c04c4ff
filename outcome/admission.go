package outcome

// Why an instance refused a new session at admission
// (stompgate_admission_refused_total{reason}, admission.Decision.Reason).
const (
	// AdmissionSessions: the instance holds its most sessions
	// (-max-sessions).
	AdmissionSessions = "sessions"
	// AdmissionRate: the instance-wide bucket of new sessions is empty
	// (-admit-rate, -admit-burst).
	AdmissionRate = "rate"
	// AdmissionMemory: the memory in use is above -memory-admit-threshold
	// of -memory-limit.
	AdmissionMemory = "memory"
)

// AdmissionReasons returns every admission refusal reason. The slice is
// a fresh copy.
func AdmissionReasons() []string {
	return []string{AdmissionSessions, AdmissionRate, AdmissionMemory}
}
