package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/inbox"
)

// startInbox serves the approvals inbox in the background and returns the
// URL to print (with a sign-in token when the worker made one up).
func startInbox(ctx context.Context, cfg config.Inbox, cl *client.Client, store content.Store, reg prometheus.Registerer, logger *slog.Logger) (string, error) {
	users := cfg.Users
	login := ""
	if len(users) == 0 {
		token := os.Getenv("WARDEN_INBOX_TOKEN")
		if token == "" {
			b := make([]byte, 16)
			if _, err := rand.Read(b); err != nil {
				return "", fmt.Errorf("inbox token: %w", err)
			}
			token = hex.EncodeToString(b)
		}
		users = map[string]inbox.User{"admin": {Token: token}}
		login = "/?token=" + token
	}
	srv, err := inbox.New(inbox.Config{Client: cl, Content: store, Listen: cfg.Listen, TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey,
		Users: users, Roles: cfg.Roles, Registerer: reg})
	if err != nil {
		return "", fmt.Errorf("inbox: %w", err)
	}
	go func() {
		if err := srv.ListenAndServe(ctx); err != nil && ctx.Err() == nil {
			logger.Error("inbox stopped", "error", err)
		}
	}()
	return cfg.PublicURL() + login, nil
}
