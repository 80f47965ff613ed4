// Package metrics exposes warden's worker-level metrics on an injected
// Prometheus registry: the Temporal SDK's own metrics (NewSDKHandler),
// approval metrics (Approvals), model-call metrics (Models), tool-call
// and permission metrics (Tools), tool output sizes (ToolOutput, for
// the output middleware), the sandbox's egress connections (Egress) and
// failed Slack calls (Chat). Every warden_* metric the worker exposes is
// defined here. Nothing here touches the global registry.
package metrics
