package runner

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// boundedWriter keeps the first limit bytes written to it and counts the rest, so a command
// that floods its output costs at most limit bytes of memory.
type boundedWriter struct {
	mu      sync.Mutex // os/exec shares one writer for stdout and stderr; guard it anyway
	limit   int
	buf     []byte
	dropped int64
}

func newBoundedWriter(limit int) *boundedWriter { return &boundedWriter{limit: limit} }

// Write never fails: the command must not see EPIPE because Maven stopped listening.
func (w *boundedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if room := w.limit - len(w.buf); len(p) > room {
		w.dropped += int64(len(p) - room)
		p = p[:room]
	}
	if len(p) == 0 {
		return n, nil
	}
	if need := len(w.buf) + len(p); need > cap(w.buf) {
		// Grow by doubling, but never past the limit: append alone could overshoot the cap.
		c := min(max(2*cap(w.buf), need, 512), w.limit)
		nb := make([]byte, len(w.buf), c)
		copy(nb, w.buf)
		w.buf = nb
	}
	w.buf = append(w.buf, p...)
	return n, nil
}

// String returns what was kept and whether anything was dropped. A cut output never ends in a
// partial UTF-8 sequence and ends with a marker line saying where it was cut.
func (w *boundedWriter) String() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dropped == 0 {
		return string(w.buf), false
	}
	kept := trimPartialRune(w.buf)
	sep := "\n"
	if len(kept) == 0 || kept[len(kept)-1] == '\n' {
		sep = ""
	}
	cut := int64(len(w.buf)-len(kept)) + w.dropped
	return fmt.Sprintf("%s%s[output cut at %d bytes, %d more dropped]", kept, sep, len(kept), cut), true
}

// trimPartialRune drops an incomplete UTF-8 sequence left at the end of b by the cut. Bytes
// that were never UTF-8 are left alone: only the cut must not make things worse.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}
