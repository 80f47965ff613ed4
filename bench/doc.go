// Package bench measures what running agent tool calls through warden
// costs on a live worker: the per-call overhead of a durable tool call
// against running the same command directly, throughput under concurrent
// turns, memory and listing cost with many turns parked on approvals, and
// the Docker backend's plain exec against its persistent shell session.
//
// A [Runner] drives the scenarios over a warden [client.Client]; each
// scenario returns a report with JSON tags, and [Report.WriteTable]
// renders them for a terminal. Memory figures read /proc, so they are
// available when the bench runs on the worker's machine (Linux).
//
// [client.Client]: https://pkg.go.dev/github.com/wardenhq/warden/client#Client
package bench
