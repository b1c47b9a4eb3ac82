package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Lists never hold more than a page of records in memory. Every list
// takes count (1–1000) and offset (≥ 0) as optional: without count, the
// lists whose contract says "a page" answer defaultPage items, and the two
// whose contract says "every match" (GET /v2/checkouts, as the seed
// states, and GET /v2/payments) stream every match, a page of streamPage
// records at a time, so that a merchant's ten thousand checkouts cost one
// page of memory rather than all of them.

const (
	defaultPage = 10
	streamPage  = 200
)

// listPage reads count records from offset on, and the number of all
// matches when counted is set.
type listPage[T any] func(offset, count int, counted bool) (items []T, total int, err error)

// streamAll answers {"items":[…],"count":n,"totalCount":total} with every
// match from offset on, reading page by page until a short one. An error
// before the first byte is answered as usual; after it, the connection is
// cut (the client sees a truncated body, never a complete answer that
// lacks items). Concurrent writes may shift the pages, as they would for a
// client paging with count and offset.
func streamAll[T any](c *call, offset int, page listPage[T]) error {
	first, total, err := page(offset, streamPage, true)
	if err != nil {
		return err
	}
	c.w.Header()["Content-Type"] = jsonContentType
	c.w.WriteHeader(http.StatusOK)
	buf := append(make([]byte, 0, 32<<10), `{"ok":true,"result":{"items":[`...)
	n := 0
	for items := first; ; {
		for _, it := range items {
			if n > 0 {
				buf = append(buf, ',')
			}
			b, err := json.Marshal(it)
			if err != nil {
				panic(http.ErrAbortHandler)
			}
			buf = append(buf, b...)
			n++
			if len(buf) > 16<<10 {
				if _, err := c.w.Write(buf); err != nil {
					panic(http.ErrAbortHandler) // the client went away
				}
				buf = buf[:0]
			}
		}
		if len(items) < streamPage {
			break
		}
		offset += len(items)
		if items, _, err = page(offset, streamPage, false); err != nil {
			c.s.log.ErrorContext(c.r.Context(), "list stream cut", "request_id", requestID(c.r.Context()), "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	buf = append(buf, `],"count":`...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, `,"totalCount":`...)
	buf = strconv.AppendInt(buf, int64(total), 10)
	buf = append(buf, "}}"...)
	c.w.Write(buf)
	return nil
}
