// Package tracing records OpenTelemetry traces of a stompgate server: a
// span per CONNECT, SUBSCRIBE, traced SEND and server API publish, and a
// span per delivery of a traced message on every instance that delivers
// it, exported over OTLP/HTTP. A Tracer implements server.Tracer,
// relay.Tracer and api.Tracer; the server and the broker themselves
// import no tracing library.
//
// # What is traced
//
// A CONNECT, a SUBSCRIBE, a SEND and an API publish each start a new
// trace with probability Config.SampleRatio, decided by the Tracer with
// one random draw before anything is allocated: at the default 1 %, the
// 99 frames in 100 that are not traced cost that draw only. At most
// Config.MaxTracesPerSecond traces start each second, so that 1 % of a
// busy instance's traffic costs a bounded amount. A traced
// SEND gives its message a W3C traceparent (broker.Message.Trace) that
// the relay carries to the other instances, each of which records the
// delivery as a child of the SEND's span, and that an app destination's
// backend finds in the app stream entry (field traceparent), so that
// one message can be followed from its sender to every instance that
// delivered it and to the backend.
//
// # What a client cannot do
//
// A client does not choose what is traced. A traceparent a client puts
// on a SEND is a reserved header (broker.Reserved): it is dropped with
// the server's own headers, never read as a parent and never passed on,
// so a client that marks every SEND "sampled" costs the server what any
// other SEND does. Only the server (its own draw), the relay (a trace
// another instance started) and a caller of the server API, who holds
// the API key, decide that a message is traced. The attributes hold
// bounded, non-secret values: destination, result label and session
// id, each cut to MaxAttributeLength bytes; never a principal's name,
// a token or a body.
//
// # What a slow collector costs
//
// Ended spans wait in a queue of at most Config.MaxQueueSize spans,
// exported in batches by one goroutine; a span that finds the queue full
// is dropped and counted (Stats), so a collector that is down or slow
// costs at most that many spans of memory and never blocks a session. An
// export gives up after ExportTimeout; failures are logged once when
// they start and once when exports succeed again.
package tracing
