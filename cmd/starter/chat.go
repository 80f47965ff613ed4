package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/chat"
	"github.com/wardenhq/warden/workflows"
)

func newChatCmd(cn *conn) *cobra.Command {
	cmd := &cobra.Command{Use: "chat", Short: "Check the Slack set-up"}
	var channel, apiURL string
	test := &cobra.Command{
		Use:   "test",
		Short: "Post a sample approval message to Slack (chat.slack.channel, or --channel)",
		Long: "Posts the message a waiting call would get, for a sample Bash call, with the bot token from\n" +
			chat.EnvBotToken + " (never from the config file). Its buttons answer nothing: the sample call does not exist.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cn.settings()
			if err != nil {
				return err
			}
			token := os.Getenv(chat.EnvBotToken)
			if token == "" {
				return fmt.Errorf("%s is not set: the bot token comes from the environment only", chat.EnvBotToken)
			}
			if channel == "" {
				channel = cfg.Chat.Slack.Channel
			}
			if channel == "" {
				return errors.New("no channel: set chat.slack.channel or pass --channel")
			}
			if apiURL == "" {
				apiURL = cfg.Chat.Slack.APIURL
			}
			now := time.Now().UTC()
			p := workflows.Pending{Kind: workflows.PendingApproval, CallID: "sample_1", Tool: "Bash",
				Input:   json.RawMessage(`{"command":"kubectl rollout restart deploy/web"}`),
				Message: "Permission required for Bash", Reason: "warden chat test: a sample message, no call waits",
				Context: "Restarting web to pick up the new config.", Sandbox: "write /work, network off",
				RequestedAt: now, Deadline: now.Add(time.Hour)}
			ref, err := chat.New(token, apiURL, nil).Post(cmd.Context(), channel, "chat-test", p, cfg.Inbox.PublicURL(), "")
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "posted to %s (ts %s)\n", ref.Channel, ref.TS)
			return nil
		},
	}
	test.Flags().StringVar(&channel, "channel", "", "channel id (default chat.slack.channel)")
	test.Flags().StringVar(&apiURL, "api-url", "", "Slack Web API base URL (default chat.slack.api_url, else Slack's)")
	cmd.AddCommand(test)
	return cmd
}
