// Package metrics exposes warden's worker-level metrics on an injected
// Prometheus registry: the Temporal SDK's own metrics (NewSDKHandler),
// approval metrics (Approvals) and model-call metrics (Models). Nothing
// here touches the global registry.
package metrics
