package config

import (
	"net/http"
	"time"

	"github.com/wardenhq/warden/notify"
)

// Sender is the webhook sender of n, signing with n.Secret; nil without
// webhooks.
func (n Notify) Sender() *notify.Sender {
	if len(n.Webhooks) == 0 {
		return nil
	}
	return &notify.Sender{URLs: n.Webhooks, Secret: n.Secret, HTTPClient: &http.Client{Timeout: 10 * time.Second}}
}

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
