package memstore

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// eventLog is an org's audit events in the order of their sequence
// numbers, oldest first. Each event is kept encoded, its strings back to
// back in a chunk's bytes, beside a small index entry: recording one
// copies bytes into the newest chunk and allocates nothing most of the
// time, dropping the oldest frees whole chunks, and the garbage
// collector never scans any of it, since none of it holds a pointer but
// the chunks themselves. An org of 100 000 events costs the collector a
// few hundred chunk pointers instead of a million strings.
type eventLog struct {
	chunks []*eventChunk
	// n is the number of events held.
	n int
}

// chunkEvents is how many events a chunk holds.
const chunkEvents = 256

// eventChunk holds up to chunkEvents events; those before first are
// dropped.
type eventChunk struct {
	idx   []eventIndex
	data  []byte
	first int
}

// eventIndex locates one event in its chunk's data, with what a listing
// seeks and a cleanup compares by.
type eventIndex struct {
	seq  int64
	atMS int64
	end  uint32 // the event's bytes are data[previous end:end]
}

// add appends e, whose Seq is above every Seq held.
func (l *eventLog) add(e storage.Event) {
	var c *eventChunk
	if k := len(l.chunks); k > 0 && len(l.chunks[k-1].idx) < chunkEvents {
		c = l.chunks[k-1]
	} else {
		// The previous chunk's size is a good guess of this one's.
		var size int
		if k > 0 {
			size = len(l.chunks[k-1].data)
		}
		c = &eventChunk{idx: make([]eventIndex, 0, chunkEvents), data: make([]byte, 0, size)}
		l.chunks = append(l.chunks, c)
	}
	c.data = appendEvent(c.data, e)
	c.idx = append(c.idx, eventIndex{seq: e.Seq, atMS: e.At.UnixMilli(), end: uint32(len(c.data))}) // #nosec G115 -- a chunk's bytes stay far below 4 GiB: 256 events of bounded size
	l.n++
}

// dropOldest drops the oldest events: those recorded before before (when
// not zero), as far as the first one that is not, and as many more as it
// takes for at most max to remain (max > 0).
func (l *eventLog) dropOldest(before time.Time, max int) {
	beforeMS := before.UnixMilli()
	for l.n > 0 {
		c := l.chunks[0]
		old := !before.IsZero() && c.idx[c.first].atMS < beforeMS
		if !old && (max <= 0 || l.n <= max) {
			return
		}
		c.first++
		l.n--
		if c.first == len(c.idx) {
			l.chunks[0] = nil
			l.chunks = l.chunks[1:]
		}
	}
}

// newest calls yield with the events whose Seq is below beforeSeq (every
// event when beforeSeq is zero), newest first, until it returns false:
// each event's Seq and At, and its encoding, which decodeEvent reads and
// which yield must not keep.
func (l *eventLog) newest(beforeSeq int64, yield func(seq int64, at time.Time, raw []byte) bool) {
	for k := len(l.chunks) - 1; k >= 0; k-- {
		c := l.chunks[k]
		live := c.idx[c.first:]
		end := len(live)
		if beforeSeq != 0 {
			if live[0].seq >= beforeSeq {
				continue
			}
			end, _ = slices.BinarySearchFunc(live, beforeSeq, func(x eventIndex, seq int64) int {
				return cmpInt(x.seq, seq)
			})
		}
		for i := end - 1; i >= 0; i-- {
			j := c.first + i
			start := uint32(0)
			if j > 0 {
				start = c.idx[j-1].end
			}
			if !yield(c.idx[j].seq, time.UnixMilli(c.idx[j].atMS).UTC(), c.data[start:c.idx[j].end]) {
				return
			}
		}
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// appendEvent appends the encoding of e's fields but Seq and At (the
// index holds those): each string as its length (a uvarint) and its
// bytes; Before and After each as a byte, 0 for nil and 1 for a value,
// then, for a value, its length and bytes.
func appendEvent(b []byte, e storage.Event) []byte {
	for _, s := range [...]string{e.ID, e.Org, e.ActorID, e.ActorUsername, e.ActorTokenID, e.Action,
		e.TargetKind, e.TargetID, e.TargetUsername, e.RequestID} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, v := range [...][]byte{e.Before, e.After} {
		if v == nil {
			b = append(b, 0)
			continue
		}
		b = binary.AppendUvarint(append(b, 1), uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

var errBadEvent = errors.New("malformed event encoding")

// field reads one field appendEvent wrote, its length and its bytes: it
// returns the bytes and what follows them.
func field(b []byte) (v, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) { // #nosec G115 -- len(b)-k is not negative
		return nil, nil, errBadEvent
	}
	end := k + int(n) // #nosec G115 -- n is at most len(b)-k, so it fits
	return b[k:end], b[end:], nil
}

// decodeEvent returns the event appendEvent encoded in b, its strings and
// slices copies (the returned event shares no memory with the log).
func decodeEvent(b []byte) (storage.Event, error) {
	var e storage.Event
	var v []byte
	var err error
	for _, p := range [...]*string{&e.ID, &e.Org, &e.ActorID, &e.ActorUsername, &e.ActorTokenID, &e.Action,
		&e.TargetKind, &e.TargetID, &e.TargetUsername, &e.RequestID} {
		if v, b, err = field(b); err != nil {
			return e, err
		}
		*p = string(v)
	}
	for _, p := range [...]*[]byte{&e.Before, &e.After} {
		switch {
		case len(b) == 0:
			return e, errBadEvent
		case b[0] == 0:
			b = b[1:]
		case b[0] == 1:
			if v, b, err = field(b[1:]); err != nil {
				return e, err
			}
			*p = append([]byte{}, v...)
		default:
			return e, errBadEvent
		}
	}
	if len(b) != 0 {
		return e, errBadEvent
	}
	return e, nil
}
