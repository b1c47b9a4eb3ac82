package httpapi

import (
	"errors"
	"strconv"
	"strings"

	"payd"
	"payd/internal/sqlstore"
)

// The callback log: a merchant's own callbacks, their attempts, and a
// resend of any of them (issue: see what happened, replay a callback).

// callbackItem is a callback in the log.
type callbackItem struct {
	CallbackID     string    `json:"callbackId"`
	Event          string    `json:"event"`
	ObjectID       string    `json:"objectId"`
	URL            string    `json:"url"`
	State          string    `json:"state"` // Pending, Delivered, Failed
	Attempts       int       `json:"attempts"`
	CreatedAt      wireTime  `json:"createdAt"`
	NextAttemptAt  *wireTime `json:"nextAttemptAt"`
	DeliveredAt    *wireTime `json:"deliveredAt"`
	LastStatusCode *int      `json:"lastStatusCode"`
	LastError      *string   `json:"lastError"`
}

// callbackDetail is a callback with what was sent and every attempt.
type callbackDetail struct {
	callbackItem
	Body       string            `json:"body"`
	Headers    map[string]string `json:"headers"`
	AttemptLog []attemptRecord   `json:"attemptLog"`
}

type attemptRecord struct {
	Attempt      int      `json:"attempt"`
	StartedAt    wireTime `json:"startedAt"`
	DurationMS   int64    `json:"durationMs"`
	StatusCode   *int     `json:"statusCode"`
	Error        *string  `json:"error"`
	ResponseBody *string  `json:"responseBody"`
}

var callbackStates = map[payd.CallbackState]string{
	payd.CallbackPending: "Pending", payd.CallbackDelivered: "Delivered", payd.CallbackFailed: "Failed",
}

func callbackItemOf(c *payd.Callback) callbackItem {
	it := callbackItem{CallbackID: c.ID, Event: string(c.Event), ObjectID: c.ObjectID, URL: c.URL, State: callbackStates[c.State],
		Attempts: c.Attempts, CreatedAt: wireTime(c.CreatedAt), DeliveredAt: nullTime(c.DeliveredAt), LastError: nullStr(c.LastError)}
	if c.State == payd.CallbackPending {
		it.NextAttemptAt = nullTime(c.NextAttemptAt)
	}
	if c.LastStatus != 0 {
		code := c.LastStatus
		it.LastStatusCode = &code
	}
	return it
}

// handleCallbackList is GET /v2/callbacks.
func (s *Server) handleCallbackList(c *call) error {
	q := newQuery(c)
	f := sqlstore.CallbackFilter{MerchantID: c.m.ID}
	f.Count, f.Offset = q.paging(defaultPage, pagingParam)
	_, f.Desc = q.sorting([]string{"createdAt"}, "createdAt", func(p string) *payd.Error {
		return payd.Invalid(p, "sortBy must be createdAt and order asc or desc")
	})
	if st := q.str("state"); st != "" {
		switch strings.ToLower(st) {
		case "pending", "delivered", "failed":
			f.State = payd.CallbackState(strings.ToLower(st))
		default:
			q.bad("state", "must be Pending, Delivered or Failed")
		}
	}
	f.Event = q.text("event", 100)
	f.ObjectID = q.id("objectId")
	f.CreatedFrom, f.CreatedTo = q.time("createdAtFrom"), q.time("createdAtTo")
	if err := q.err(); err != nil {
		return err
	}
	cbs, total, err := s.store.MerchantCallbacks(c.r.Context(), f)
	if err != nil {
		return err
	}
	items := make([]callbackItem, len(cbs))
	for i, cb := range cbs {
		items[i] = callbackItemOf(cb)
	}
	return c.respond(listResult[callbackItem]{TotalCount: total, Items: items})
}

// handleCallbackGet is GET /v2/callbacks/{id}.
func (s *Server) handleCallbackGet(c *call) error {
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	cb, err := s.store.MerchantCallback(c.r.Context(), c.m.ID, id)
	if err != nil {
		return c.notFound(err, id)
	}
	atts, err := s.store.CallbackAttempts(c.r.Context(), cb.ID)
	if err != nil {
		return err
	}
	d := callbackDetail{callbackItem: callbackItemOf(cb), Body: string(cb.Body), AttemptLog: make([]attemptRecord, len(atts)),
		Headers: map[string]string{"X-Callback-Id": cb.ID, "X-Callback-Event": string(cb.Event),
			"X-Signature": cb.Signature, "X-Signature-Timestamp": strconv.FormatInt(cb.Timestamp, 10)}}
	for i, a := range atts {
		r := attemptRecord{Attempt: a.Number, StartedAt: wireTime(a.StartedAt), DurationMS: a.Duration.Milliseconds(),
			Error: nullStr(a.Error)}
		if a.StatusCode != 0 {
			code := a.StatusCode
			r.StatusCode = &code
			body := a.ResponseBody
			r.ResponseBody = &body
		}
		d.AttemptLog[i] = r
	}
	return c.respond(d)
}

// handleCallbackResend is POST /v2/callbacks/{id}/resend: any state.
func (s *Server) handleCallbackResend(c *call) error {
	if err := c.noBody(); err != nil {
		return err
	}
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	cb, err := s.store.ReplayCallback(c.r.Context(), c.m, id, c.now)
	if errors.Is(err, payd.ErrNotFound) {
		return c.a.notFound(id)
	}
	if err != nil {
		return err
	}
	return c.respond(callbackItemOf(cb))
}
