package e2b

import (
	"io"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"strings"
)

// queryEscape escapes a query value, spaces as %20 like the SDKs.
func queryEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

type multipartBody struct {
	w *multipart.Writer
}

func newMultipart(w io.Writer) *multipartBody {
	return &multipartBody{w: multipart.NewWriter(w)}
}

// file writes one part named field whose filename is the destination
// path, then closes the body.
func (m *multipartBody) file(field, filename string, data []byte) error {
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="`+escapeQuotes(field)+`"; filename="`+escapeQuotes(filename)+`"`)
	h.Set("Content-Type", "application/octet-stream")
	part, err := m.w.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := part.Write(data); err != nil {
		return err
	}
	return m.w.Close()
}

func (m *multipartBody) contentType() string { return m.w.FormDataContentType() }

func escapeQuotes(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}
