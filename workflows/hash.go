package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// CallHash binds an answer to the exact call (tool, input, call id) and
// the policy version the approver saw. Pending.Hash is its value; every
// answer must send it back.
func CallHash(tool string, input json.RawMessage, callID string, policyVersion int) string {
	h := sha256.New()
	h.Write([]byte("warden-call-v2"))
	h.Write([]byte{0})
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(input)
	h.Write([]byte{0})
	h.Write([]byte(callID))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(policyVersion)))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// legacyCallHash is the hash older workers showed (no call id); signals
// recorded with it replay as they were decided.
func legacyCallHash(tool string, input json.RawMessage, policyVersion int) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(input)
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(policyVersion)))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// legacyHash reports whether h is the hash an older worker showed for p
// (without the call id, at any policy version of the turn so far).
func (t *turn) legacyHash(p Pending, h string) bool {
	for v := 0; v <= t.PolicyVersion; v++ {
		if h == legacyCallHash(p.Tool, p.Input, v) {
			return true
		}
	}
	return false
}
