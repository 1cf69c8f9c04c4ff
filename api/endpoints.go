package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/stompgate/stompgate/stompframe"
)

// publishRequest is the body of POST /api/v1/publish.
type publishRequest struct {
	Destination string            `json:"destination"`
	Body        *string           `json:"body"`
	BodyBase64  *string           `json:"body_base64"`
	Headers     map[string]string `json:"headers"`
}

// publishResponse is the 202 answer: the message id and how many
// subscribers on this instance took it.
type publishResponse struct {
	ID        string `json:"id"`
	Delivered int    `json:"delivered"`
}

// requestLimit is the most request bytes read for a body of max bytes:
// base64 and JSON escaping make a body larger on the wire, up to six
// times for a body of control characters escaped as \u00XX.
func requestLimit(max int) int64 { return int64(max)*6 + 16<<10 }

// decode reads r's JSON body into v. The error names the field at fault.
func decode(r *http.Request, limit int64, v any) (field string, err error) {
	cr := &countingReader{r: io.LimitReader(r.Body, limit+1)}
	dec := json.NewDecoder(cr)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case cr.n > limit:
			// Only a body makes a request this large.
			return "body", fmt.Errorf("the request is larger than %d bytes", limit)
		case errors.As(err, &te) && te.Field != "":
			return te.Field, fmt.Errorf("%s: want a JSON %s", te.Field, te.Type.Kind())
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return name, fmt.Errorf("unknown field %q", name)
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			return "request", errors.New("the request body is not a complete JSON object")
		}
		return "request", fmt.Errorf("the request body is not a JSON object: %v", err)
	}
	return "", nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (h *handler) publish(r *http.Request) (int, any) {
	var req publishRequest
	if field, err := decode(r, requestLimit(h.cfg.MaxBody), &req); err != nil {
		return badRequest(field, err.Error())
	}
	if req.Destination == "" {
		return badRequest("destination", "destination is required")
	}
	var body []byte
	switch {
	case req.Body != nil && req.BodyBase64 != nil:
		return badRequest("body_base64", "give body or body_base64, not both")
	case req.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*req.BodyBase64)
		if err != nil {
			return badRequest("body_base64", "body_base64 is not standard base64: "+err.Error())
		}
		body = b
	case req.Body != nil:
		body = []byte(*req.Body)
	}
	if len(body) > h.cfg.MaxBody {
		field := "body"
		if req.BodyBase64 != nil {
			field = "body_base64"
		}
		return badRequest(field, fmt.Sprintf("the body is %d bytes; at most %d", len(body), h.cfg.MaxBody))
	}
	if len(req.Headers) > h.cfg.MaxHeaders {
		return badRequest("headers", fmt.Sprintf("%d headers; at most %d", len(req.Headers), h.cfg.MaxHeaders))
	}
	names := make([]string, 0, len(req.Headers))
	for n := range req.Headers {
		if n == "" {
			return badRequest("headers", "a header name is empty")
		}
		// The same bound a client's SEND meets (stompframe's header
		// line limit): subscribers' parsers are sized for it.
		if l := len(n) + 1 + len(req.Headers[n]); l > stompframe.DefaultMaxHeaderLine {
			return badRequest("headers", fmt.Sprintf("header %.40q makes a %d-byte line; at most %d", n, l, stompframe.DefaultMaxHeaderLine))
		}
		names = append(names, n)
	}
	sort.Strings(names)
	headers := make([]stompframe.Header, 0, len(names))
	for _, n := range names {
		headers = append(headers, stompframe.Header{Name: n, Value: req.Headers[n]})
	}
	id, n := h.publishTraced(r, req.Destination, headers, body)
	return http.StatusAccepted, publishResponse{ID: id, Delivered: n}
}

// disconnectRequest is the body of POST /api/v1/disconnect.
type disconnectRequest struct {
	Principal string `json:"principal"`
	Session   string `json:"session"`
	Reason    string `json:"reason"`
}

func (h *handler) disconnect(r *http.Request) (int, any) {
	var req disconnectRequest
	if field, err := decode(r, 64<<10, &req); err != nil {
		return badRequest(field, err.Error())
	}
	if req.Principal == "" && req.Session == "" {
		return badRequest("principal", "principal or session is required")
	}
	reason := req.Reason
	if reason == "" {
		reason = "the backend ended this session"
	}
	n := h.cfg.Server.Disconnect(req.Principal, req.Session, reason)
	if h.cfg.Others != nil {
		if err := h.cfg.Others.Disconnect(r.Context(), req.Principal, req.Session, reason); err != nil {
			return http.StatusInternalServerError, map[string]any{"error": "the other instances were not reached: " + err.Error(), "disconnected": n}
		}
	}
	return http.StatusOK, map[string]int{"disconnected": n}
}
