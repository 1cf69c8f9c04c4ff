package broker

import (
	"fmt"

	"github.com/stompgate/stompgate/stompframe"
)

// AckMode is a SUBSCRIBE frame's ack header value.
type AckMode uint8

const (
	// AckAuto (the default): the client sends no ACK.
	AckAuto AckMode = iota
	// AckClient: cumulative ACKs.
	AckClient
	// AckClientIndividual: one ACK per message.
	AckClientIndividual
)

// ParseAckMode parses the ack header of SUBSCRIBE; empty means auto.
func ParseAckMode(s string) (AckMode, error) {
	switch s {
	case "", "auto":
		return AckAuto, nil
	case "client":
		return AckClient, nil
	case "client-individual":
		return AckClientIndividual, nil
	}
	return AckAuto, fmt.Errorf("broker: ack mode %q is not auto, client or client-individual", s)
}

// String returns the header value.
func (a AckMode) String() string {
	switch a {
	case AckClient:
		return "client"
	case AckClientIndividual:
		return "client-individual"
	}
	return "auto"
}

// Subscriber receives messages for its subscriptions.
type Subscriber interface {
	// Deliver queues m for sub without blocking. It returns false when the
	// subscriber cannot take it (its queue is full or it is closing); the
	// subscriber then deals with itself, the broker moves on. b is the
	// publisher's Batch, which the subscriber may hand the start of its
	// writing to; it is nil when the publisher has none.
	Deliver(sub *Subscription, m *Message, b *Batch) bool
}

// Subscription is one SUBSCRIBE of one session.
type Subscription struct {
	// ID is the client's subscription id.
	ID string
	// Destination is the subscribed destination.
	Destination string
	// Ack is the subscription's ack mode.
	Ack AckMode
	// Version is the session's STOMP version, which decides header
	// escaping of the MESSAGE frames.
	Version stompframe.Version
	// Subscriber is the session that receives the messages.
	Subscriber Subscriber

	head  []byte // "MESSAGE\nsubscription:<id>\n", encoded once
	index int    // position in its topic's subs; guarded by the topic's mu
}

// NewSubscription returns a subscription ready for Broker.Subscribe.
func NewSubscription(id, dest string, ack AckMode, v stompframe.Version, s Subscriber) *Subscription {
	head := append(make([]byte, 0, 24+len(id)), "MESSAGE\n"...)
	head = stompframe.AppendHeader(head, "subscription", id, v)
	return &Subscription{ID: id, Destination: dest, Ack: ack, Version: v, Subscriber: s, head: head}
}
