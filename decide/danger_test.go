package decide

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
)

// TestDangerousCommandsUnderAllowRules: the dangerous-command checks are
// safety checks in the seed's sense. A matching allow rule (Bash(git:*),
// Bash(sudo:*), Bash(*)) does not silence them: they ask in default and
// accept_edits and are denied in dont_ask and explore; bypass skips
// them (it gives up safety prompts), and even then a protected path
// stays denied.
func TestDangerousCommandsUnderAllowRules(t *testing.T) {
	t.Parallel()
	cmds := map[string]string{
		"git reset --hard HEAD~3":           "git history: git reset --hard",
		"git clean -fdx":                    "git history: git clean -f",
		"git push --force origin main":      "git history: git push --force",
		"git push --force-with-lease":       "git history: git push --force-with-lease",
		"git branch -D feature":             "git history: git branch -D",
		"sudo ls":                           "privilege change: sudo",
		"sudo -u root make install":         "privilege change: sudo",
		"chmod u+s build/app":               "privilege change: chmod u+s",
		"chmod 4755 build/app":              "privilege change: chmod 4755",
		"chown root:root build/app":         "privilege change: chown root:root",
		"iptables -F":                       "system state: iptables",
		"modprobe nbd":                      "system state: modprobe",
		"systemctl restart nginx":           "system state: systemctl restart",
		"crontab -r":                        "system state: crontab",
		"mount /dev/sdb1 /mnt":              "system state: mount",
		"shutdown -h now":                   "system state: shutdown",
		"wipefs -a /dev/sdb":                "raw device: wipefs",
		"git status && git reset --hard":    "git history: git reset --hard",
		"timeout 5 git push -f origin main": "git history: git push --force",
	}
	rules := []string{"Bash(git:*)", "Bash(sudo:*)", "Bash(chmod:*)", "Bash(chown:*)", "Bash(iptables:*)", "Bash(modprobe:*)",
		"Bash(systemctl:*)", "Bash(crontab:*)", "Bash(mount:*)", "Bash(shutdown:*)", "Bash(wipefs:*)", "Bash(timeout:*)", "Bash(*)"}
	for _, mode := range []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModeDontAsk,
		permission.ModeExplore, permission.ModeBypass} {
		pc, err := permission.Policy{Mode: mode, Allow: rules}.Context()
		if err != nil {
			t.Fatal(err)
		}
		for cmd, check := range cmds {
			v := decideBash(t, cmd, &pc, false)
			switch mode {
			case permission.ModeBypass:
				if v.Behavior != permission.Allow {
					t.Errorf("%s %q: %s (%s), want allow: bypass skips safety checks", mode, cmd, v.Behavior, v.Reason)
				}
			case permission.ModeDontAsk, permission.ModeExplore:
				if v.Behavior != permission.Deny || v.Layer != permission.LayerSafety || !strings.Contains(v.Reason, check) {
					t.Errorf("%s %q: %s %s %q, want a safety deny naming %q", mode, cmd, v.Behavior, v.Layer, v.Reason, check)
				}
			default:
				if v.Behavior != permission.Ask || v.Layer != permission.LayerSafety || !v.BypassImmune ||
					v.Reason != "Safety check: dangerous command ("+check+")" {
					t.Errorf("%s %q: %s %s %q, want the safety ask %q", mode, cmd, v.Behavior, v.Layer, v.Reason, check)
				}
			}
		}
		// The controls: the same rules allow the harmless forms.
		for _, cmd := range []string{"git push origin main", "git reset HEAD~1", "git branch -d merged", "systemctl status nginx", "crontab -l", "iptables -L -n"} {
			if mode == permission.ModeExplore {
				continue // explore allows only read-only calls
			}
			if v := decideBash(t, cmd, &pc, false); v.Behavior != permission.Allow {
				t.Errorf("%s %q: %s (%s), want allowed by the rule", mode, cmd, v.Behavior, v.Reason)
			}
		}
	}
}

// TestDangerousCommandKeepsProtectedDenied: a dangerous command (or
// pattern) that also writes a protected path is denied (the safety ask
// does not hide the path check), so bypass, which skips the ask, cannot
// reach it. (What a command that is not read-only reads is not known to
// the analysis; the local sandbox hides the protected files from it.)
func TestDangerousCommandKeepsProtectedDenied(t *testing.T) {
	t.Parallel()
	for _, mode := range []permission.Mode{permission.ModeDefault, permission.ModeBypass} {
		pc := &permission.Context{Mode: mode, Protected: []string{"/srv/warden{,/**}"}}
		for _, cmd := range []string{"sudo rm /srv/warden/auth/operator.key", "rm -rf /srv/warden", "chown root /srv/warden/db",
			"git reset --hard > /srv/warden/log"} {
			if v := decideBash(t, cmd, pc, false); v.Behavior != permission.Deny || !strings.Contains(v.Message, "protected") {
				t.Errorf("%s %q: %s %q, want denied as protected", mode, cmd, v.Behavior, v.Message)
			}
		}
	}
}

// TestSandboxAutoAllowKeepsDangerous: sandbox.auto_allow never runs a
// command a dangerous-command check flags, since the check is a safety
// check (LayerSafety), not the mode's ASK that auto_allow turns into an
// ALLOW; an ordinary command still is auto-allowed (the control).
func TestSandboxAutoAllowKeepsDangerous(t *testing.T) {
	t.Parallel()
	pc := &permission.Context{Mode: permission.ModeDefault, Sandbox: &permission.Sandbox{AutoAllow: true},
		DangerousCommands: []string{"terraform destroy:*"}}
	for _, cmd := range []string{"sudo ls", "doas make", "chmod u+s app", "chown root app", "systemctl stop app", "crontab jobs",
		"modprobe nbd", "mount /dev/sdb1 mnt", "git branch -D x", "terraform destroy"} {
		v := decideBash(t, cmd, pc, true)
		if v.Behavior != permission.Ask || v.Layer != permission.LayerSafety || !strings.Contains(v.Reason, "dangerous command") {
			t.Errorf("%q with auto_allow: %s %s %q, want the safety ask", cmd, v.Behavior, v.Layer, v.Reason)
		}
	}
	if v := decideBash(t, "make build", pc, true); v.Behavior != permission.Allow || v.Layer != permission.LayerSandbox {
		t.Errorf("make build: %s %s, want auto-allowed", v.Behavior, v.Layer)
	}
}

// TestDangerousCommandsPolicy: permission.dangerous_commands adds
// patterns that hold like the built-in checks, and a pattern written as
// a rule is refused with the form to use.
func TestDangerousCommandsPolicy(t *testing.T) {
	t.Parallel()
	pc, err := permission.Policy{Allow: []string{"Bash(terraform:*)"}, DangerousCommands: []string{"terraform destroy:*"}}.Context()
	if err != nil {
		t.Fatal(err)
	}
	if v := decideBash(t, "terraform destroy -auto-approve", &pc, false); v.Layer != permission.LayerSafety ||
		v.Reason != "Safety check: dangerous command (policy: terraform destroy:*)" {
		t.Errorf("terraform destroy: %s %s %q", v.Behavior, v.Layer, v.Reason)
	}
	if v := decideBash(t, "terraform plan", &pc, false); v.Behavior != permission.Allow {
		t.Errorf("terraform plan: %s %q, want allowed by the rule", v.Behavior, v.Reason)
	}
	if _, err := (permission.Policy{DangerousCommands: []string{"Bash(terraform destroy:*)"}}).Context(); err == nil ||
		!strings.Contains(err.Error(), `"terraform destroy:*"`) {
		t.Errorf("a rule as a pattern: %v", err)
	}
}
