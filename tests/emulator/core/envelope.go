package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// CFError is one entry of the Envelope's errors array.
type CFError struct {
	Code       int       `json:"code"`
	Message    string    `json:"message"`
	ErrorChain []CFError `json:"error_chain,omitempty"`
}

// Envelope is the v4 response shape every Cloudflare API route shares.
type Envelope struct {
	Success    bool      `json:"success"`
	Errors     []CFError `json:"errors"`
	Messages   []any     `json:"messages"`
	Result     any       `json:"result"`
	ResultInfo any       `json:"result_info,omitempty"`
}

// PageInfo is result_info for page-numbered lists.
type PageInfo struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Count      int `json:"count"`
	TotalCount int `json:"total_count"`
	TotalPages int `json:"total_pages"`
}

// APIError is a handler's failure, rendered as an error Envelope.
type APIError struct {
	Status int
	Errs   []CFError
}

func (e *APIError) Error() string {
	if len(e.Errs) == 0 {
		return http.StatusText(e.Status)
	}
	return strconv.Itoa(e.Errs[0].Code) + " " + e.Errs[0].Message
}

func NewAPIError(status, code int, msg string) *APIError {
	return &APIError{Status: status, Errs: []CFError{{Code: code, Message: msg}}}
}

func WriteJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Messages quote SQL and paths; escaping <, > and & would only make them
	// harder to read and differ from what Cloudflare sends.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func WriteResult(w http.ResponseWriter, result any) {
	WriteEnvelope(w, http.StatusOK, result, nil, nil)
}

// Respond answers a handler's outcome: its error's Envelope, or its result.
func Respond(w http.ResponseWriter, err error, result any) {
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteResult(w, result)
}

// SaveAndRespond ends a mutating handler (called after its lock is
// released): on success it persists the family's state with save and
// answers result; the first error, the handler's or the save's, is
// answered instead.
func SaveAndRespond(w http.ResponseWriter, err error, save func() error, result any) {
	if err == nil {
		err = save()
	}
	Respond(w, err, result)
}

func WriteEnvelope(w http.ResponseWriter, status int, result, info any, messages []any) {
	if messages == nil {
		messages = []any{}
	}
	WriteJSON(w, status, Envelope{Success: true, Errors: []CFError{}, Messages: messages, Result: result, ResultInfo: info})
}

func WriteError(w http.ResponseWriter, err error) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = NewAPIError(http.StatusInternalServerError, 10001, "We encountered an internal error. Please try again.")
	}
	WriteJSON(w, ae.Status, Envelope{Success: false, Errors: ae.Errs, Messages: []any{}, Result: nil})
}

// MaxBody bounds request bodies; KV values may be up to 25 MiB.
const MaxBody = 32 << 20

// DecodeJSON reads a JSON body into v whatever the Content-Type, as the real
// API does for curl users. Numbers stay json.Number so D1 params keep integer
// precision.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		return NewAPIError(http.StatusRequestEntityTooLarge, 6007, "Malformed JSON in request body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return NewAPIError(http.StatusBadRequest, 6007, "Malformed JSON in request body")
	}
	return nil
}

// PageParams reads page/per_page the way v4 list endpoints do. Floats are
// accepted because cloudflare-go types both as float64.
func PageParams(r *http.Request, defPerPage, maxPerPage int) (page, perPage int) {
	page, perPage = 1, defPerPage
	if v, err := strconv.ParseFloat(r.URL.Query().Get("page"), 64); err == nil && v >= 1 {
		page = int(v)
	}
	if v, err := strconv.ParseFloat(r.URL.Query().Get("per_page"), 64); err == nil && v >= 1 {
		perPage = int(v)
	}
	if perPage > maxPerPage {
		perPage = maxPerPage
	}
	return page, perPage
}

// Paginate slices one page out of items. A page past the end is empty, not an
// error: cloudflare-go's auto-pager keeps asking for page+1 until it gets an
// empty page, so anything else would loop or fail.
func Paginate[T any](items []T, page, perPage int) ([]T, PageInfo) {
	total := len(items)
	info := PageInfo{Page: page, PerPage: perPage, TotalCount: total, TotalPages: (total + perPage - 1) / perPage}
	start := (page - 1) * perPage
	if start >= total {
		info.Count = 0
		return []T{}, info
	}
	end := min(start+perPage, total)
	out := items[start:end]
	info.Count = len(out)
	return out, info
}
