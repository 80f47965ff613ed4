// Package audit reconstructs who decided what about each tool call of a
// warden turn from the turn's Temporal histories — every run of its
// continue-as-new chain, oldest first:
//
//   - the permission engine's verdicts: warden.Prepare results, recorded
//     as local-activity markers, or as completed activities for turns
//     whose checks run on a tool queue;
//   - approvals and denials (the "approve" update or signal) and external
//     results, with the approver's identity and the path they came by;
//   - escalations at an approval's deadline (deny, allow or notify),
//     derived from the recorded deadline policy and the workflow's clock;
//   - the proposed input (the model's), the approved input (an approver's
//     edit) and the effective input (what the tool ran with) of each call.
//
// It reads only what the workflow records about calls and decisions, not
// the conversation, so it does not depend on how messages are stored.
//
// The files, by job: history.go reads the histories from the server;
// record.go is the record schema (what the audit writes out); extract.go
// walks a chain's events, and verdicts.go, answers.go, notes.go
// (escalations and budget answers, as recorded), evidence.go and
// notifications.go say what each kind of event records; legacy.go
// matches the verdicts of histories recorded before verdicts named their
// call and guesses the kind of those recorded before verdicts said it,
// and legacyescalations.go re-simulates the deadlines of runs recorded
// before escalations were; report.go writes records out, whatif.go
// re-decides recorded verdicts.
package audit
