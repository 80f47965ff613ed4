// Package cli holds what the starter command shows and reads that a
// program embedding warden's client does not need: the pending and
// remembered-approval tables, a running call's output lines, AskUser
// questions for a terminal, policy files (checked as the worker checks
// them), jobs and results files, and the batch report. It is internal to
// cmd/starter; the typed client is package client.
package cli
