package load

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Body kinds: what fills a published body after its stamp. Compression
// ratios depend on it, so a run names the one it used.
const (
	// BodyPad fills with 'x': the cheapest body to build, and one that
	// compresses far better than any real message.
	BodyPad = "pad"
	// BodyChat fills with chat messages as JSON: a user, a room and a
	// sentence of common words, different in every message.
	BodyChat = "chat"
	// BodyGame fills with a game-state snapshot as JSON: players with
	// positions, velocities, health and scores, numbers different in
	// every message.
	BodyGame = "game"
)

// BodyKinds are the body kinds, BodyPad first.
var BodyKinds = []string{BodyPad, BodyChat, BodyGame}

// bodyVariants is how many distinct paddings the publishers draw from:
// far more than the messages a 32 KiB deflate window holds (about 75 of
// 400 bytes), so that a compressor keeping its window between messages
// does not find a message whole in the ones before it.
const bodyVariants = 4096

// Paddings returns distinct paddings of kind, each padLen bytes of ASCII,
// drawn from a fixed seed so that every run sends the same bytes; nil for
// BodyPad (or ""), whose padding NewPublisher makes.
func Paddings(kind string, padLen int) ([][]byte, error) {
	var gen func(r *rand.Rand, b *strings.Builder)
	switch kind {
	case BodyPad, "":
		return nil, nil
	case BodyChat:
		gen = chatBody
	case BodyGame:
		gen = gameBody
	default:
		return nil, fmt.Errorf("body kind %q: want one of %s", kind, strings.Join(BodyKinds, ", "))
	}
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, bodyVariants)
	for i := range out {
		var b strings.Builder
		for b.Len() < padLen {
			gen(r, &b)
		}
		out[i] = []byte(b.String()[:padLen])
	}
	return out, nil
}

var chatWords = strings.Fields(`the a to and of in is it you that he was for on are with as I his they be
at one have this from or had by hot word but what some we can out other were all there when up use your
how said an each she which do their time if will way about many then them write would like so these her
long make thing see him two has look more day could go come did number sound no most people my over know
water than call first who may down side been now find any new work part take get place made live where
after back little only round man year came show every good me give our under name very through just form
sentence great think say help low line differ turn cause much mean before move right boy old too same tell
does set three want air well also play small end put home read hand port large spell add even land here
must big high such follow act why ask men change went light kind off need house picture try us again animal
point mother world near build self earth father game room team win lose next round ready lunch table today`)

var names = strings.Fields(`ana ben chloe dev emma farid gina hugo ines jon kira leo maya nils omar pia quinn rosa sam tess`)

// chatBody appends one chat message.
func chatBody(r *rand.Rand, b *strings.Builder) {
	b.WriteString(`{"type":"chat","user":"`)
	b.WriteString(names[r.IntN(len(names))])
	b.WriteString(`","room":"lobby-`)
	b.WriteString(strconv.Itoa(r.IntN(50)))
	b.WriteString(`","text":"`)
	for i, n := 0, 6+r.IntN(20); i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(chatWords[r.IntN(len(chatWords))])
	}
	b.WriteString(`","sent":`)
	b.WriteString(strconv.FormatInt(1_764_000_000_000+r.Int64N(1_000_000_000), 10))
	b.WriteString("}\n")
}

var teams = []string{"red", "blue", "green", "gold"}

// gameBody appends one game-state snapshot of a few players.
func gameBody(r *rand.Rand, b *strings.Builder) {
	b.WriteString(`{"type":"state","tick":`)
	b.WriteString(strconv.Itoa(r.IntN(1_000_000)))
	b.WriteString(`,"players":[`)
	for i, n := 0, 4+r.IntN(6); i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, `{"id":%d,"name":"%s","team":"%s","x":%.2f,"y":%.2f,"vx":%.2f,"vy":%.2f,"hp":%d,"score":%d,"alive":%t}`,
			r.IntN(1000), names[r.IntN(len(names))], teams[r.IntN(len(teams))],
			r.Float64()*1024, r.Float64()*768, r.Float64()*8-4, r.Float64()*8-4,
			r.IntN(101), r.IntN(5000), r.IntN(10) > 0)
	}
	b.WriteString("]}\n")
}
