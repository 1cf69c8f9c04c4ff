package tictactoe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// APIClient publishes through wsserver's server API (POST
// /api/v1/publish on the admin listener).
type APIClient struct {
	// URL is the admin listener's base URL, e.g. http://127.0.0.1:8082.
	URL string
	// Key is wsserver's -api-key.
	Key string
	// HTTP is the client used; nil means http.DefaultClient.
	HTTP *http.Client
}

// Publish sends body to every subscriber of dest, on every instance.
func (c *APIClient) Publish(ctx context.Context, dest string, body []byte) error {
	req, _ := json.Marshal(map[string]string{"destination": dest, "body": string(body)})
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/api/v1/publish", bytes.NewReader(req))
	if err != nil {
		return fmt.Errorf("tictactoe: publish: %w", err)
	}
	r.Header.Set("Authorization", "Bearer "+c.Key)
	r.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(r)
	if err != nil {
		return fmt.Errorf("tictactoe: publish: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("tictactoe: publish to %s: %s: %s", dest, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}
