package stompframe_test

import (
	"fmt"

	"github.com/stompgate/stompgate/stompframe"
)

// A session's WebSocket messages do not line up with frames: here the
// first message holds a CONNECT and half a SEND, the second the rest of the
// SEND and a heart-beat.
func ExampleDecoder() {
	messages := [][]byte{
		[]byte("CONNECT\naccept-version:1.2,1.1,1.0\nheart-beat:10000,10000\n\n\x00SEND\ndestination:/topic/ch"),
		[]byte("at\ncontent-length:5\n\nhe\x00lo\x00\n"),
	}
	d := stompframe.NewDecoder(stompframe.Limits{})
	for _, msg := range messages {
		d.Feed(msg)
		for {
			f, err := d.Next()
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			if f == nil {
				break // need the next message
			}
			if f.Command == stompframe.CommandConnect {
				v, _ := stompframe.Negotiate(f.Get("accept-version"))
				d.SetVersion(v)
				fmt.Println("CONNECT, version", v)
				continue
			}
			fmt.Printf("%s to %s: %q\n", f.Command, f.Get("destination"), f.Body)
		}
	}
	fmt.Println("heart-beats:", d.HeartBeats())
	// Output:
	// CONNECT, version 1.2
	// SEND to /topic/chat: "he\x00lo"
	// heart-beats: 1
}

// A broker composes a MESSAGE frame without building a Frame.
func ExampleAppendHeader() {
	body := []byte("hello")
	var b []byte
	b = append(b, "MESSAGE\n"...)
	b = stompframe.AppendHeader(b, "destination", "/topic/a:b", stompframe.V12)
	b = stompframe.AppendHeader(b, "subscription", "sub-0", stompframe.V12)
	b = stompframe.AppendContentLength(b, len(body))
	b = append(b, '\n')
	b = append(b, body...)
	b = append(b, 0)
	fmt.Printf("%q\n", b)
	// Output:
	// "MESSAGE\ndestination:/topic/a\\cb\nsubscription:sub-0\ncontent-length:5\n\nhello\x00"
}

func ExampleAppend() {
	f := &stompframe.Frame{Command: stompframe.CommandReceipt}
	f.Add("receipt-id", "77")
	fmt.Printf("%q\n", stompframe.Append(nil, f, stompframe.V12))
	// Output:
	// "RECEIPT\nreceipt-id:77\n\n\x00"
}

func ExampleNegotiate() {
	for _, h := range []string{"1.2,1.1,1.0", "1.0,1.1", "", "2.0"} {
		v, ok := stompframe.Negotiate(h)
		fmt.Printf("%q -> %v %v\n", h, v, ok)
	}
	// Output:
	// "1.2,1.1,1.0" -> 1.2 true
	// "1.0,1.1" -> 1.1 true
	// "" -> 1.0 true
	// "2.0" -> Version(0) false
}
