package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// delayedWriter holds what is written to it for up to a delay, then
// writes it to its output at once: a server that logs a line per request
// makes one write per busy moment instead of one per request. Call Flush
// before the process exits.
type delayedWriter struct {
	mu      sync.Mutex
	out     *bufio.Writer
	delay   time.Duration
	timer   *time.Timer
	pending bool
}

func newDelayedWriter(w io.Writer, delay time.Duration) *delayedWriter {
	d := &delayedWriter{out: bufio.NewWriterSize(w, 64<<10), delay: delay}
	d.timer = time.AfterFunc(time.Hour, func() { _ = d.Flush() }) // nowhere to report an error
	d.timer.Stop()
	return d
}

// Write implements io.Writer. It writes p through at once only when the
// buffer is full.
func (d *delayedWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.pending {
		d.pending = true
		d.timer.Reset(d.delay)
	}
	return d.out.Write(p)
}

// Flush writes what waits, and returns the error of writing it.
func (d *delayedWriter) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending = false
	return d.out.Flush()
}
