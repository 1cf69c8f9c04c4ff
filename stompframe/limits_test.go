package stompframe

import (
	"errors"
	"testing"
)

func TestLimitsWithDefaults(t *testing.T) {
	t.Parallel()
	got := Limits{MaxHeaders: 5, MaxHeaderLine: -1}.WithDefaults()
	want := Limits{MaxFrameSize: DefaultMaxFrameSize, MaxHeaders: 5, MaxHeaderLine: -1}
	if got != want {
		t.Errorf("WithDefaults() = %+v, want %+v", got, want)
	}
	if got := (Limits{}).WithDefaults().MaxFrameSize; got != 65536 {
		t.Errorf("default MaxFrameSize = %d, want 65536", got)
	}
}

func TestLimitsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limits Limits
		want   string
	}{
		{"zero", Limits{}, ""},
		{"positive", Limits{MaxFrameSize: 1, MaxHeaders: 1, MaxHeaderLine: 1}, ""},
		{"negative frame size", Limits{MaxFrameSize: -1}, "stompframe: MaxFrameSize -1 is negative"},
		{"negative headers", Limits{MaxHeaders: -2}, "stompframe: MaxHeaders -2 is negative"},
		{"negative line", Limits{MaxHeaderLine: -3}, "stompframe: MaxHeaderLine -3 is negative"},
		{"too large", Limits{MaxFrameSize: MaxLimit + 1}, "stompframe: MaxFrameSize 1073741825 exceeds 1073741824"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.limits.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate() = %q, want %q", got, tt.want)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(Validate(), ErrInvalidConfig) = false")
			}
		})
	}
}

func TestLimitsSanitized(t *testing.T) {
	t.Parallel()
	got := Limits{MaxFrameSize: -1, MaxHeaders: MaxLimit + 1, MaxHeaderLine: 7}.sanitized()
	want := Limits{MaxFrameSize: DefaultMaxFrameSize, MaxHeaders: MaxLimit, MaxHeaderLine: 7}
	if got != want {
		t.Errorf("sanitized() = %+v, want %+v", got, want)
	}
}
