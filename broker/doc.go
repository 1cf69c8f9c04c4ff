// Package broker is stompgate's in-process topic broker: the part of the
// inbound path after the interceptor chain, where a SEND that passed
// becomes a MESSAGE for every subscription on exactly its destination.
//
//	session ─► chain ─► Broker.Publish ─► Subscriber.Deliver (each session's outbound queue)
//
// Delivery is at-most-once, the STOMP 1.2 model for topics: a message is
// handed to each subscriber's queue once and forgotten, and ACK and NACK
// never cause redelivery. Publish never blocks on a subscriber; one that
// cannot take a message (its queue is full) deals with itself, and the
// server closes it as a slow consumer.
//
// Two costs are kept independent of how busy a destination is:
//
//   - A Message is encoded once per STOMP version in use and shared by
//     every subscriber's queue; each subscriber adds only its short
//     subscription (and ack) header lines when its frame is written.
//   - SUBSCRIBE and UNSUBSCRIBE are O(1) on a destination with any number
//     of subscriptions and allocate nothing: a client that churns on a
//     room of thousands costs no more than on an empty one. Publish walks
//     an immutable snapshot of the subscriptions, rebuilt by the first
//     publish after a change, so a subscriber may call back into the
//     Broker from Deliver.
//
// Destinations are spread over independently locked shards, so fan-out on
// one never waits for a change on another. Hooks tell a cross-instance
// relay (package relay) when a destination gains its first subscription
// and loses its last, so that it listens only where someone here does.
//
// The package imports the standard library and stompframe only.
package broker
