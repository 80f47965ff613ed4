package backend

import "bytes"

// CappedBuffer is an io.Writer that keeps the first Max bytes written to
// it and drops the rest, noting that it did: the stdout or stderr of an
// [ExecRequest] with MaxOutput set. Writes never fail, so a process is
// never stopped by a full buffer. The zero value keeps everything.
type CappedBuffer struct {
	// Max is the most bytes kept; zero or less keeps all of them.
	Max int
	// Tee, when set, receives every write whole, before the cap (a
	// backend's live output for [Streamer]).
	Tee func(p []byte)

	buf bytes.Buffer
	cut bool
}

// Write keeps what fits under Max and reports all of p as written.
func (c *CappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if c.Tee != nil {
		c.Tee(p)
	}
	if c.Max > 0 {
		if room := max(c.Max-c.buf.Len(), 0); room < len(p) {
			c.cut = true
			p = p[:room]
		}
	}
	if len(p) > 0 {
		c.buf.Write(p)
	}
	return n, nil
}

// Bytes returns the bytes kept (not a copy).
func (c *CappedBuffer) Bytes() []byte { return c.buf.Bytes() }

// Truncated reports whether any write was cut.
func (c *CappedBuffer) Truncated() bool { return c.cut }
