// Inbound channels: how approvers answer from a chat service. Slack is
// built in (slack.go); another service (Teams, email replies) is one
// Channel, mounted at /channels/NAME, that answers through the same
// core as the inbox's own pages.

package inbox

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// Channel is the one interface a chat service implements for approvers
// to answer from it. The inbox serves the service's callbacks at
// /channels/NAME (and below) without its own sign-in: Handler verifies
// them its own way (a signature, a shared secret), maps the sender's
// account on the service to an inbox user with Desk.User
// (inbox.users.NAME.accounts.NAME), and answers through Desk, whose
// checks are the inbox's own: the user's roles over the call, the
// call's hash, a reason the policy requires. The worker's side (posting
// the messages) is activities.Messenger.
type Channel interface {
	// Name names the channel: its path, its accounts key and its label
	// in metrics and answers (lower case letters, digits and dashes).
	Name() string
	// Handler serves the channel's callbacks.
	Handler(d Desk) http.Handler
}

// Desk is what the inbox lends a Channel: the answer core and the
// people it knows.
type Desk interface {
	Answerer
	// User finds the inbox user whose account on the named channel is
	// id (inbox.users.NAME.accounts, and .slack for Slack).
	User(channel, id string) (string, bool)
	// Refused counts an answer the channel refused
	// (warden_inbox_refusals_total{channel}); a refused sender
	// (no such account, a bad signature) counts as unauthorized too.
	Refused(channel string, unauthorized bool)
}

var _ Desk = (*Server)(nil)

// channelName is what a Channel's name may be.
var channelName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// channelsPrefix is where Channels are served.
const channelsPrefix = "/channels/"

// User finds the inbox user whose account on channel is id.
func (s *Server) User(channel, id string) (string, bool) {
	if id == "" {
		return "", false
	}
	for _, u := range s.users {
		if u.u.Accounts[channel] == id || (channel == "slack" && u.u.Slack == id) {
			return u.name, true
		}
	}
	return "", false
}

// Refused counts an answer channel refused.
func (s *Server) Refused(channel string, unauthorized bool) {
	s.refusals.WithLabelValues(channel).Inc()
	if unauthorized {
		s.unauthorized.Inc()
	}
}

// mountChannels checks cfg.Channels' names and serves each at
// /channels/NAME.
func (s *Server) mountChannels() error {
	s.channels = http.NewServeMux()
	seen := map[string]bool{"slack": s.cfg.SlackSecret != ""}
	for _, c := range s.cfg.Channels {
		name := c.Name()
		if !channelName.MatchString(name) {
			return fmt.Errorf("inbox: channel name %q: want lower case letters, digits and dashes", name)
		}
		if seen[name] {
			return fmt.Errorf("inbox: channel %q is configured twice", name)
		}
		seen[name] = true
		h := c.Handler(s)
		s.channels.Handle(channelsPrefix+name, h)
		s.channels.Handle(channelsPrefix+name+"/", h)
	}
	return nil
}

// isChannelPath reports whether path is a channel's callback path.
func isChannelPath(path string) bool { return strings.HasPrefix(path, channelsPrefix) }
