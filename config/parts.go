package config

// PublicURL is the inbox's address for links: inbox.url when set, else
// http(s)://inbox.listen.
func (i Inbox) PublicURL() string {
	if i.URL != "" {
		return i.URL
	}
	scheme := "http"
	if i.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + i.Listen
}
