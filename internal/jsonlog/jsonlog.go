// Package jsonlog is a slog.Handler for a server's request log: it writes
// the JSON lines slog.JSONHandler writes, byte for byte, but formats the
// common records (a message and flat attributes of basic kinds) itself,
// and can gather lines for a moment before writing them, so that a server
// that logs each request pays neither slog's general formatting nor a
// write system call per request.
//
// A record it does not format itself (groups, attributes added with
// WithAttrs or WithGroup, values of other kinds) goes to an inner
// slog.JSONHandler on the same output, in order with the others.
package jsonlog

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Options configures a Handler. The zero value logs at Info and above and
// writes each line at once.
type Options struct {
	// Level is the least level logged; nil means slog.LevelInfo.
	Level slog.Leveler
	// FlushDelay, when positive, lets lines wait up to this long before
	// they are written, so that the lines of a busy moment are written
	// together. A line at a level above Info is written at once, with the
	// lines before it. Call Flush before the process exits.
	FlushDelay time.Duration
}

// maxBuffered is how many bytes of lines may wait; more are written at once.
const maxBuffered = 64 << 10

// Handler is a slog.Handler; see the package comment.
type Handler struct {
	out   *output
	slow  slog.Handler
	level slog.Leveler
	// plain is false on a handler made by WithAttrs or WithGroup, whose
	// records all go to slow.
	plain bool
}

var _ slog.Handler = (*Handler)(nil)

// New returns a Handler that writes to w. A nil opts is the zero Options.
func New(w io.Writer, opts *Options) *Handler {
	if opts == nil {
		opts = &Options{}
	}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	o := &output{w: w, delay: opts.FlushDelay}
	return &Handler{
		out:   o,
		slow:  slog.NewJSONHandler(o, &slog.HandlerOptions{Level: level}),
		level: level,
		plain: true,
	}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{out: h.out, slow: h.slow.WithAttrs(as), level: h.level}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{out: h.out, slow: h.slow.WithGroup(name), level: h.level}
}

// Handle implements slog.Handler. It returns the error of writing the
// output, when it writes; errors of writes after a delay are lost.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if !h.plain || !plainRecord(r) {
		if err := h.slow.Handle(ctx, r); err != nil {
			return err
		}
		if r.Level > slog.LevelInfo {
			return h.Flush()
		}
		return nil
	}
	o := h.out
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = appendRecord(o.buf, r)
	return o.written(r.Level > slog.LevelInfo)
}

// Flush writes the lines that wait, and returns the error of writing them.
func (h *Handler) Flush() error {
	o := h.out
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.flush()
}

// output is where a Handler and its inner slog.JSONHandler write, in turn.
type output struct {
	mu    sync.Mutex
	w     io.Writer
	delay time.Duration
	buf   []byte
	// timer runs flushLater; pending says it is set to.
	timer   *time.Timer
	pending bool
}

// Write is the inner slog.JSONHandler's: p is one whole line.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	return len(p), o.written(false)
}

// written is called, with o.mu held, once a line is added to buf: it
// writes buf now, or sees that a flush is due within the delay.
func (o *output) written(now bool) error {
	if now || o.delay <= 0 || len(o.buf) >= maxBuffered {
		return o.flush()
	}
	if !o.pending {
		o.pending = true
		if o.timer == nil {
			o.timer = time.AfterFunc(o.delay, o.flushLater)
		} else {
			o.timer.Reset(o.delay)
		}
	}
	return nil
}

// flush writes buf, with o.mu held.
func (o *output) flush() error {
	if len(o.buf) == 0 {
		return nil
	}
	_, err := o.w.Write(o.buf)
	if cap(o.buf) > 2*maxBuffered {
		o.buf = nil
	} else {
		o.buf = o.buf[:0]
	}
	return err
}

func (o *output) flushLater() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = false
	_ = o.flush() // nobody to tell; the next write will meet the error
}

// plainRecord reports whether appendRecord writes r as slog.JSONHandler
// would: every attribute has a key and a basic kind, and no time is
// outside the years slog writes.
func plainRecord(r slog.Record) bool {
	if !r.Time.IsZero() && !plainYear(r.Time) {
		return false
	}
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		ok = a.Key != "" && plainValue(a.Value)
		return ok
	})
	return ok
}

func plainValue(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration:
		return true
	case slog.KindTime:
		return plainYear(v.Time())
	case slog.KindAny:
		a := v.Any()
		_, marshals := a.(json.Marshaler)
		_, isErr := a.(error)
		return isErr && !marshals
	}
	return false
}

func plainYear(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y < 10000
}

// appendRecord appends r as one JSON line, for a plain r.
func appendRecord(b []byte, r slog.Record) []byte {
	b = append(b, '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		b = r.Time.Round(0).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = appendString(b, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b = append(b, ',')
		b = appendString(b, a.Key)
		b = append(b, ':')
		b = appendValue(b, a.Value)
		return true
	})
	return append(b, "}\n"...)
}

func appendValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	default: // an error; see plainValue
		return appendString(b, v.Any().(error).Error())
	}
}

// appendString appends s as a JSON string, escaped as slog.JSONHandler
// escapes it: quotes, backslashes and control characters, U+2028 and
// U+2029; each byte of invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainByte[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// plainByte tells the bytes appendString copies as they are: ASCII but
// control characters, quotes and backslashes.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
