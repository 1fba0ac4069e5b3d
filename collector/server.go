package collector

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	js "github.com/dpstat/dpstat/clients/js"
)

//go:embed web/index.html
var web embed.FS

// DefaultMaxBody is the default limit on a request body, 8 MiB.
const DefaultMaxBody = 8 << 20

// DefaultMaxBatch is the default limit on the reports of one request.
const DefaultMaxBatch = 20000

// ServerOptions configures the HTTP service.
type ServerOptions struct {
	// MaxBody limits request bodies (default DefaultMaxBody).
	MaxBody int64
	// MaxBatch limits the reports of one request (default DefaultMaxBatch).
	MaxBatch int
	// MaxReportsPerAddr, when positive, caps the reports one client
	// address (an IPv6 /64) may post to one survey per QuotaWindow; a
	// batch beyond it is refused whole (429).
	MaxReportsPerAddr int
	// QuotaWindow is the quota's window (default DefaultQuotaWindow).
	QuotaWindow time.Duration
	// MaxTrackedAddrs bounds the addresses the quota tracks in a window
	// (default DefaultMaxTrackedAddrs); once it is reached, new addresses
	// are refused until the window ends.
	MaxTrackedAddrs int
}

// Handler returns the collector's HTTP service over a store:
//
//	GET  /                              the demo page
//	GET  /dpstat-ldp.mjs                the JavaScript client module
//	GET  /api/surveys                   list of surveys
//	POST /api/surveys                   create a survey (curator: Authorization: Bearer TOKEN)
//	GET  /api/surveys/{id}              a survey's public parameters
//	POST /api/surveys/{id}/devices      enrol devices (curator): {"count": n} → {"tokens": [...]}
//	POST /api/surveys/{id}/reports      post reports: {"reports": [...]} or one report object
//	                                    (an enrolment survey: one report, Authorization: Bearer DEVICE-TOKEN)
//	GET  /api/surveys/{id}/estimates    estimates, ?confidence=0.95
//
// Errors are JSON objects {"error": {"code": ..., "message": ...}}, the
// shape dpstat serve uses.
func Handler(st *Store, o ServerOptions) http.Handler {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.QuotaWindow <= 0 {
		o.QuotaWindow = DefaultQuotaWindow
	}
	if o.MaxTrackedAddrs <= 0 {
		o.MaxTrackedAddrs = DefaultMaxTrackedAddrs
	}
	h := &handler{st: st, o: o}
	if o.MaxReportsPerAddr > 0 {
		h.quota = newQuota(o.MaxReportsPerAddr, o.MaxTrackedAddrs, o.QuotaWindow)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.page)
	mux.HandleFunc("GET /dpstat-ldp.mjs", h.module)
	mux.HandleFunc("GET /api/surveys", h.list)
	mux.HandleFunc("POST /api/surveys", h.create)
	mux.HandleFunc("GET /api/surveys/{id}", h.public)
	mux.HandleFunc("POST /api/surveys/{id}/reports", h.reports)
	mux.HandleFunc("POST /api/surveys/{id}/devices", h.enrol)
	mux.HandleFunc("GET /api/surveys/{id}/estimates", h.estimates)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("%s %s: no such endpoint", r.Method, r.URL.Path))
			return
		}
		http.NotFound(w, r)
	})
	return mux
}

type handler struct {
	st    *Store
	o     ServerOptions
	quota *quota // nil: no quota
}

// errorBody is the body of every error answer: {"error": APIError}.
type errorBody struct {
	Error APIError `json:"error"`
}

// APIError is the error of an error answer.
type APIError struct {
	// Code is a short machine-readable reason, e.g. "out_of_domain".
	Code string `json:"code"`
	// Message names the problem and what would be accepted.
	Message string `json:"message"`
	// Index is the position of the offending report in a batch.
	Index *int `json:"index,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{APIError{Code: code, Message: msg}})
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	b, _ := web.ReadFile("web/index.html")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(b)
}

func (h *handler) module(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	_, _ = w.Write(js.Module)
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"surveys": h.st.Surveys()})
}

// readBody reads a bounded JSON body; it writes the error answer and
// returns nil on failure.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) []byte {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("request body exceeds %d bytes: send smaller batches", h.o.MaxBody))
		} else {
			writeError(w, http.StatusBadRequest, "unreadable_body", "reading the request body: "+err.Error())
		}
		return nil
	}
	return body
}

func (h *handler) create(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || !h.st.AdminTokenMatches(token) {
		writeError(w, http.StatusUnauthorized, "unauthorized", "creating a survey needs the curator's token: Authorization: Bearer TOKEN")
		return
	}
	body := h.readBody(w, r)
	if body == nil {
		return
	}
	var spec SurveySpec
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		writeError(w, http.StatusBadRequest, "malformed_json", "survey: "+err.Error())
		return
	}
	sv, err := h.st.CreateSurvey(spec)
	if err != nil {
		status, code := http.StatusBadRequest, "invalid_survey"
		if errors.Is(err, ErrExists) {
			status, code = http.StatusConflict, "survey_exists"
		}
		writeError(w, status, code, err.Error())
		return
	}
	p, _ := h.st.Public(sv.ID)
	writeJSON(w, http.StatusCreated, p)
}

func (h *handler) public(w http.ResponseWriter, r *http.Request) {
	p, err := h.st.Public(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusNotFound, "survey_not_found", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// batch is the body of POST .../reports: either {"reports": [...]} or a
// single report object.
type batch struct {
	// Reports is the batch form.
	Reports []Report `json:"reports"`
	Report
}

func (h *handler) enrol(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !h.st.AdminTokenMatches(token) {
		writeError(w, http.StatusUnauthorized, "unauthorized", "enrolling devices needs the curator's token: Authorization: Bearer TOKEN")
		return
	}
	body := h.readBody(w, r)
	if body == nil {
		return
	}
	var req struct {
		Count int `json:"count"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed_json", `devices: `+err.Error()+`: want {"count": n}`)
		return
	}
	toks, err := h.st.EnrolDevices(r.PathValue("id"), req.Count)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			writeError(w, http.StatusNotFound, "survey_not_found", err.Error())
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_enrolment", err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"tokens": toks})
}

func (h *handler) reports(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sv, err := h.st.get(id)
	if err != nil {
		writeError(w, http.StatusNotFound, "survey_not_found", err.Error())
		return
	}
	deviceID := ""
	if sv.Enrolment {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			writeError(w, http.StatusUnauthorized, "device_token_required", fmt.Sprintf("survey %q takes reports from enrolled devices only: send Authorization: Bearer DEVICE-TOKEN", id))
			return
		}
		if deviceID, err = h.st.DeviceReportID(id, token); err != nil {
			writeError(w, http.StatusUnauthorized, "device_not_enrolled", err.Error()+": send the token the curator enrolled this device with")
			return
		}
	}
	body := h.readBody(w, r)
	if body == nil {
		return
	}
	if reports, ok := parseBatchFast(body); ok {
		h.ingestFrom(w, r, id, deviceID, reports, false)
		return
	}
	var b batch
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		writeError(w, http.StatusBadRequest, "malformed_json", "reports: "+err.Error()+`: want {"reports": [{"id": ..., ...}]} or one report object`)
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "malformed_json", "reports: trailing data after the JSON object")
		return
	}
	reports := b.Reports
	single := b.Report.ID != "" || b.Report.Value != nil || b.Report.Seed != nil || b.Report.Row != nil || b.Report.Bits != ""
	switch {
	case reports != nil && single:
		writeError(w, http.StatusBadRequest, "malformed_json", `reports: both "reports" and report fields: send one or the other`)
		return
	case single:
		reports = []Report{b.Report}
	}
	h.ingestFrom(w, r, id, deviceID, reports, single)
}

// ingestFrom applies enrolment and the quota, then ingests.
func (h *handler) ingestFrom(w http.ResponseWriter, r *http.Request, id, deviceID string, reports []Report, single bool) {
	if deviceID != "" {
		if len(reports) != 1 {
			writeError(w, http.StatusBadRequest, "one_report_per_device", fmt.Sprintf("reports: %d reports: an enrolled device sends exactly one report", len(reports)))
			return
		}
		// The device's report id: one report per device however often
		// it posts.
		reports[0].ID = deviceID
	}
	if h.quota != nil {
		ok, used := h.quota.reserve(id, r.RemoteAddr, len(reports))
		if !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(h.o.QuotaWindow.Seconds())))
			writeError(w, http.StatusTooManyRequests, "quota_exceeded", fmt.Sprintf("reports: %d more from %s would exceed the quota of %d reports per address per survey per %v (%d used): nothing of this batch was counted",
				len(reports), addrKey(r.RemoteAddr), h.o.MaxReportsPerAddr, h.o.QuotaWindow, used))
			return
		}
		accepted := h.ingest(w, id, reports, single)
		h.quota.refund(id, r.RemoteAddr, len(reports)-accepted)
		return
	}
	h.ingest(w, id, reports, single)
}

// ingest counts a batch and answers; it returns the number accepted.
func (h *handler) ingest(w http.ResponseWriter, id string, reports []Report, single bool) int {
	switch {
	case single:
	case len(reports) == 0:
		writeError(w, http.StatusBadRequest, "empty_batch", `reports: no reports: want {"reports": [...]} with 1 to `+strconv.Itoa(h.o.MaxBatch)+" reports")
		return 0
	case len(reports) > h.o.MaxBatch:
		writeError(w, http.StatusRequestEntityTooLarge, "batch_too_large", fmt.Sprintf("reports: %d reports: want at most %d per request", len(reports), h.o.MaxBatch))
		return 0
	}
	res, err := h.st.Ingest(id, reports)
	if err != nil {
		var re *ReportError
		if errors.As(err, &re) {
			idx := re.Index
			writeJSON(w, http.StatusUnprocessableEntity, errorBody{APIError{Code: re.Code, Message: re.Error() + " (nothing of this batch was counted)", Index: &idx}})
			return 0
		}
		if errors.Is(err, ErrNotFound) {
			writeError(w, http.StatusNotFound, "survey_not_found", err.Error())
			return 0
		}
		if errors.Is(err, ErrFull) {
			writeError(w, http.StatusServiceUnavailable, "collector_full", err.Error())
			return 0
		}
		writeError(w, http.StatusInternalServerError, "store_error", err.Error())
		return 0
	}
	writeJSON(w, http.StatusOK, res)
	return res.Accepted
}

func (h *handler) estimates(w http.ResponseWriter, r *http.Request) {
	conf := 0.95
	if s := r.URL.Query().Get("confidence"); s != "" {
		c, err := strconv.ParseFloat(s, 64)
		if err != nil || !(c > 0 && c < 1) {
			writeError(w, http.StatusBadRequest, "invalid_confidence", fmt.Sprintf("confidence = %q: want a number in (0, 1)", s))
			return
		}
		conf = c
	}
	res, err := h.st.Estimates(r.PathValue("id"), conf)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			writeError(w, http.StatusNotFound, "survey_not_found", err.Error())
			return
		}
		writeError(w, http.StatusInternalServerError, "estimate_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, res)
}
