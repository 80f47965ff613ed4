// Package e2b runs tools in an E2B sandbox (https://e2b.dev) over plain
// net/http: the control-plane REST API creates, reconnects, extends and
// kills sandboxes, and the in-sandbox envd daemon runs processes (Connect
// protocol, JSON codec, server streaming) and serves files.
//
// The wire protocol is the one E2B documents for its API and envd; the
// package hand-rolls the small subset it needs instead of generated
// protobuf code. Package e2bfake is a local server speaking the same
// protocol, for tests.
//
// Pointing the client elsewhere: Config.APIURL selects the control plane
// and Config.SandboxURL the envd endpoint. When SandboxURL is set every
// envd request goes to that base URL and is routed by the E2b-Sandbox-Id
// and E2b-Sandbox-Port headers (which are always sent), the scheme the
// E2B proxy uses for sandbox.<domain>, localhost and IP hosts. Otherwise
// the host is https://49983-<sandboxID>.<domain>.
package e2b
