package jsonlog

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// Request is the line of one served request: the record a server's
// request log writes for it (Record), which LogRequest writes without
// building.
type Request struct {
	Time     time.Time
	ID       string
	Method   string
	Path     string
	Status   int
	Bytes    int64
	Duration time.Duration
	Remote   string
}

// Record returns r as an Info record with the message "request".
func (r Request) Record() slog.Record {
	line := slog.NewRecord(r.Time, slog.LevelInfo, "request", 0)
	line.AddAttrs(
		slog.String("request_id", r.ID),
		slog.String("method", r.Method),
		slog.String("path", r.Path),
		slog.Int("status", r.Status),
		slog.Int64("bytes", r.Bytes),
		slog.Duration("duration", r.Duration),
		slog.String("remote", r.Remote))
	return line
}

// LogRequest does what Handle(ctx, r.Record()) does, with the same bytes,
// without building the record or walking its attributes.
func (h *Handler) LogRequest(ctx context.Context, r Request) error {
	if !h.Enabled(ctx, slog.LevelInfo) {
		return nil
	}
	if !h.plain || (!r.Time.IsZero() && !plainYear(r.Time)) {
		return h.Handle(ctx, r.Record())
	}
	o := h.out
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = appendRequest(o.buf, r)
	return o.written(false)
}

// appendRequest appends r as appendRecord appends r.Record().
func appendRequest(b []byte, r Request) []byte {
	b = append(b, '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		b = r.Time.Round(0).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":"INFO","msg":"request","request_id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"method":`...)
	b = appendString(b, r.Method)
	b = append(b, `,"path":`...)
	b = appendString(b, r.Path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, r.Bytes, 10)
	b = append(b, `,"duration":`...)
	b = strconv.AppendInt(b, int64(r.Duration), 10)
	b = append(b, `,"remote":`...)
	b = appendString(b, r.Remote)
	return append(b, "}\n"...)
}
