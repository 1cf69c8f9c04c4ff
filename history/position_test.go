package history

import (
	"errors"
	"strings"
	"testing"
)

func TestParseStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, offset, epoch string
		want                Start
		err                 bool
	}{
		{"absent", "", "", Start{Kind: StartNext}, false},
		{"next", "next", "", Start{Kind: StartNext}, false},
		{"first", "first", "", Start{Kind: StartFirst}, false},
		{"last", "last", "E", Start{Kind: StartLast}, false},
		{"number", "42", "E", Start{Kind: StartAt, Offset: 42, Epoch: "E"}, false},
		{"rabbitmq form", "offset=42", "E", Start{Kind: StartAt, Offset: 42, Epoch: "E"}, false},
		{"zero", "0", "E", Start{Kind: StartAt, Offset: 0, Epoch: "E"}, false},
		{"no epoch", "7", "", Start{Kind: StartAt, Offset: 7}, false},
		{"negative", "-1", "E", Start{}, true},
		{"plus", "+1", "E", Start{}, true},
		{"overflow", "18446744073709551616", "E", Start{}, true},
		{"empty offset=", "offset=", "E", Start{}, true},
		{"timestamp not supported", "timestamp=1686519750", "E", Start{}, true},
		{"word", "latest", "", Start{}, true},
		{"epoch too long", "1", strings.Repeat("e", MaxEpochLen+1), Start{}, true},
		{"epoch with space", "1", "a b", Start{}, true},
		{"epoch not ascii", "1", "é", Start{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStart(tc.offset, tc.epoch)
			if tc.err {
				if !errors.Is(err, ErrInvalidStart) {
					t.Fatalf("ParseStart(%q, %q) error = %v, want ErrInvalidStart", tc.offset, tc.epoch, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseStart(%q, %q) = %+v, %v; want %+v", tc.offset, tc.epoch, got, err, tc.want)
			}
		})
	}
}
