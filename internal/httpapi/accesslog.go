package httpapi

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"payd"
)

// The access log line, written without slog. Every API request logs one
// line, and slog's handlers build it by walking the record's attributes
// generically: 12% of payd's own work for a GET of an RTP
// (BenchmarkRTPGetHandler). AccessLog writes the same line, byte for byte
// what slog.TextHandler or slog.JSONHandler with default options writes
// for the record the middleware would log, straight into the writer the
// handler writes to. It does so only when every value is one slog writes
// as it is (or, for the text format, in plain double quotes); a value slog
// would escape (a path with '=' or a control byte, say) makes the caller
// log that request through slog instead. FuzzAccessLine holds the two to
// the same bytes.

// AccessLog writes access lines to w, in slog's JSON format or its text
// format. w must take each Write whole, as slog's handlers need of it too.
type AccessLog struct {
	w    io.Writer
	json bool
	bufs sync.Pool
}

// NewAccessLog writes access lines to w, the writer of the server's
// slog.JSONHandler (json) or slog.TextHandler, both with default options.
func NewAccessLog(w io.Writer, json bool) *AccessLog {
	return &AccessLog{w: w, json: json, bufs: sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}}
}

// accessEntry is what one access line says, in the order it says it.
type accessEntry struct {
	at                             time.Time
	requestID, method, path, route string
	client                         string // the client's address (client.go)
	status                         int
	duration                       time.Duration
	merchantID                     string // "" when no merchant authenticated
}

// record is e as slog logs it.
func (e *accessEntry) record() slog.Record {
	rec := slog.NewRecord(e.at, slog.LevelInfo, "request", 0)
	rec.AddAttrs(slog.String("request_id", e.requestID), slog.String("method", e.method), slog.String("path", e.path),
		slog.String("route", e.route), slog.String("client", e.client), slog.Int("status", e.status), slog.Duration("duration", e.duration))
	if e.merchantID != "" {
		rec.AddAttrs(slog.String("merchant_id", e.merchantID))
	}
	return rec
}

// write writes e's line and reports whether it could; when it could not,
// nothing was written.
func (a *AccessLog) write(e *accessEntry) bool {
	bp := a.bufs.Get().(*[]byte)
	b, ok := a.appendLine((*bp)[:0], e)
	if ok {
		a.w.Write(b)
	}
	*bp = b
	a.bufs.Put(bp)
	return ok
}

// plainness of a string value: whether slog writes it as it is.
type plainness uint8

const (
	escaped plainness = iota // slog would escape something in it
	bare                     // written as it is, in both formats
	spaced                   // as it is but for spaces: the text format quotes it
)

// plain tells how slog would write s. It is conservative: printable ASCII
// but '"', '\\' and '=' only.
func plain(s string) plainness {
	if s == "" {
		return escaped
	}
	p := bare
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			p = spaced
		case c < 0x21 || c > 0x7e || c == '"' || c == '\\' || c == '=':
			return escaped
		}
	}
	return p
}

func (a *AccessLog) appendLine(b []byte, e *accessEntry) ([]byte, bool) {
	type attr struct {
		key, val string
		p        plainness
	}
	strs := [...]attr{{key: "request_id", val: e.requestID}, {key: "method", val: e.method}, {key: "path", val: e.path},
		{key: "route", val: e.route}, {key: "client", val: e.client}, {key: "merchant_id", val: e.merchantID}}
	n := len(strs)
	if e.merchantID == "" {
		n-- // not logged
	}
	for i := range strs[:n] {
		if strs[i].p = plain(strs[i].val); strs[i].p == escaped {
			return b, false
		}
	}
	t := e.at.Round(0) // as slog keeps a record's time
	if y := t.Year(); y < 0 || y >= 10000 {
		return b, false
	}
	str := func(s attr) {
		if a.json {
			b = append(append(append(append(b, `,"`...), s.key...), `":"`...), s.val...)
			b = append(b, '"')
			return
		}
		b = append(append(append(b, ' '), s.key...), '=')
		if s.p == spaced {
			b = append(append(append(b, '"'), s.val...), '"')
		} else {
			b = append(b, s.val...)
		}
	}
	if a.json {
		b = append(b, `{"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":"INFO","msg":"request"`...)
	} else {
		b = append(b, "time="...)
		b = appendRFC3339Millis(b, t)
		b = append(b, " level=INFO msg=request"...)
	}
	for _, s := range strs[:5] {
		str(s)
	}
	if a.json {
		b = strconv.AppendInt(append(b, `,"status":`...), int64(e.status), 10)
		b = strconv.AppendInt(append(b, `,"duration":`...), int64(e.duration), 10)
	} else {
		b = strconv.AppendInt(append(b, " status="...), int64(e.status), 10)
		b = append(append(b, " duration="...), e.duration.String()...)
	}
	if n == len(strs) {
		str(strs[5])
	}
	if a.json {
		b = append(b, '}')
	}
	return append(b, '\n'), true
}

// appendRFC3339Millis is how slog's text format writes a time: RFC 3339
// with exactly three digits of milliseconds, truncated.
// The caller has checked that the year lies within 0–9999.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	return t.AppendFormat(payd.AppendWallMillis(b, t), "Z07:00")
}
