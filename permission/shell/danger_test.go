package shell

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
)

// dangerCase is one command and what DangerousCommand says of it: the
// kind and a substring of the name, or kind "" for a command it must not
// flag (a listing form, a harmless neighbour).
type dangerCase struct {
	cmd  string
	kind string
	name string
}

var dangerCases = []dangerCase{
	// Privilege changes.
	{"sudo ls", DangerPrivilege, "sudo"},
	{"sudo -u root id", DangerPrivilege, "sudo"},
	{"su -c 'make install'", DangerPrivilege, "su"},
	{"su root", DangerPrivilege, "su"},
	{"doas rc-service nginx restart", DangerPrivilege, "doas"},
	{"pkexec id", DangerPrivilege, "pkexec"},
	{"env FOO=1 sudo make install", DangerPrivilege, "sudo"},
	{"bash -c 'sudo id'", DangerPrivilege, "sudo"},
	{"chmod u+s /usr/local/bin/x", DangerPrivilege, "chmod u+s"},
	{"chmod +s x", DangerPrivilege, "chmod +s"},
	{"chmod g=rxs x", DangerPrivilege, "chmod g=rxs"},
	{"chmod a+rwxs x", DangerPrivilege, "chmod a+rwxs"},
	{"chmod 4755 x", DangerPrivilege, "chmod 4755"},
	{"chmod 2755 x", DangerPrivilege, "chmod 2755"},
	{"chmod -R 06755 dir", DangerPrivilege, "chmod 06755"},
	{"chmod -Rv u+rwx,g+s dir", DangerPrivilege, "g+s"},
	{"chmod $MODE x", DangerPrivilege, "only known at run time"},
	{"chmod --reference=/usr/bin/sudo x", DangerPrivilege, "--reference"},
	{"find . -exec chmod u+s {} ;", DangerPrivilege, "chmod u+s"},
	{"chown root x", DangerPrivilege, "chown root"},
	{"chown root:root x", DangerPrivilege, "chown root:root"},
	{"chown -R 0:0 dir", DangerPrivilege, "chown 0:0"},
	{"chown :root x", DangerPrivilege, "chown :root"},
	{"chown me.root x", DangerPrivilege, "chown me.root"},
	{"chgrp root x", DangerPrivilege, "chgrp root"},
	{"install -m 4755 -o root x /usr/local/bin/x", DangerPrivilege, "setuid"},
	{"install --owner=root x /usr/local/bin/x", DangerPrivilege, "owned by root"},
	{"chmod 755 x", "", ""},
	{"chmod u+x,g-s x", "", ""},
	{"chmod -s x", "", ""},
	{"chmod 1777 /tmp/x", "", ""},
	{"chown me:staff x", "", ""},
	{"chown -R me dir", "", ""},
	{"install -m 755 x bin/x", "", ""},
	{"ls /usr/bin/sudo", "", ""},
	{"echo sudo", "", ""},
	// System state.
	{"modprobe nbd", DangerSystem, "modprobe"},
	{"insmod ./x.ko", DangerSystem, "insmod"},
	{"rmmod nbd", DangerSystem, "rmmod"},
	{"iptables -F", DangerSystem, "iptables"},
	{"iptables -A INPUT -j DROP", DangerSystem, "iptables"},
	{"iptables -L -Z", DangerSystem, "iptables"},
	{"ip6tables -P INPUT ACCEPT", DangerSystem, "ip6tables"},
	{"iptables-restore < rules", DangerSystem, "iptables-restore"},
	{"nft flush ruleset", DangerSystem, "nft"},
	{"ufw disable", DangerSystem, "ufw"},
	{"ufw allow 22", DangerSystem, "ufw"},
	{"firewall-cmd --add-port=80/tcp", DangerSystem, "firewall-cmd"},
	{"mount /dev/sdb1 /mnt", DangerSystem, "mount"},
	{"mount -o remount,rw /", DangerSystem, "mount"},
	{"umount /mnt", DangerSystem, "umount"},
	{"swapoff -a", DangerSystem, "swapoff"},
	{"systemctl restart nginx", DangerSystem, "systemctl restart"},
	{"systemctl --user disable x", DangerSystem, "systemctl disable"},
	{"systemctl daemon-reload", DangerSystem, "systemctl daemon-reload"},
	{"systemctl $CMD nginx", DangerSystem, "only known at run time"},
	{"service nginx stop", DangerSystem, "service"},
	{"crontab -r", DangerSystem, "crontab"},
	{"crontab -e", DangerSystem, "crontab"},
	{"crontab jobs.txt", DangerSystem, "crontab"},
	{"shutdown -h now", DangerSystem, "shutdown"},
	{"reboot", DangerSystem, "reboot"},
	{"halt", DangerSystem, "halt"},
	{"poweroff", DangerSystem, "poweroff"},
	{"init 0", DangerSystem, "init 0"},
	{"sysctl -w net.ipv4.ip_forward=1", DangerSystem, "sysctl"},
	{"sysctl kernel.randomize_va_space=0", DangerSystem, "sysctl"},
	{"iptables -L -n", "", ""},
	{"iptables -nvL INPUT", "", ""},
	{"iptables -S", "", ""},
	{"nft list ruleset", "", ""},
	{"ufw status", "", ""},
	{"firewall-cmd --list-all", "", ""},
	{"mount", "", ""},
	{"mount -l -t ext4", "", ""},
	{"systemctl", "", ""},
	{"systemctl status nginx", "", ""},
	{"systemctl is-active nginx", "", ""},
	{"service nginx status", "", ""},
	{"crontab -l", "", ""},
	{"sysctl kernel.hostname", "", ""},
	{"lsmod", "", ""},
	{"modinfo nbd", "", ""},
	// Raw devices (dd, mkfs, fdisk and redirections to a device are the
	// spec's dangerous patterns, checked first; see TestCheck).
	{"wipefs -a /dev/sdb", DangerDevice, "wipefs"},
	{"parted /dev/sdb mklabel gpt", DangerDevice, "parted"},
	{"sgdisk --zap-all /dev/nvme0n1", DangerDevice, "sgdisk"},
	{"mkswap /dev/sdb2", DangerDevice, "mkswap"},
	{"blkdiscard /dev/sdb", DangerDevice, "blkdiscard"},
	{"cp disk.img /dev/sdb", DangerDevice, "/dev/sdb"},
	{"echo x | tee /dev/sda", DangerDevice, "/dev/sda"},
	{"shred -n 1 /dev/nvme0n1", DangerDevice, "/dev/nvme0n1"},
	{"truncate -s 0 /dev/mapper/root", DangerDevice, "/dev/mapper/root"},
	{"echo x | tee /dev/null", "", ""},
	{"cp data /dev/shm/data", "", ""},
	{"cp a b", "", ""},
	// History-destroying git.
	{"git reset --hard", DangerGit, "git reset --hard"},
	{"git reset --hard HEAD~3", DangerGit, "git reset --hard"},
	{"git -C sub reset --hard origin/main", DangerGit, "git reset --hard"},
	{"git --no-pager reset --merge", DangerGit, "git reset --merge"},
	{"git clean -f", DangerGit, "git clean -f"},
	{"git clean -fdx", DangerGit, "git clean -f"},
	{"git clean -xdf", DangerGit, "git clean -f"},
	{"git clean --force -d", DangerGit, "git clean -f"},
	{"git push --force", DangerGit, "git push --force"},
	{"git push -f origin main", DangerGit, "git push --force"},
	{"git push -uf origin main", DangerGit, "git push --force"},
	{"git push --force-with-lease origin main", DangerGit, "--force-with-lease"},
	{"git push --force-with-lease=main:abc origin main", DangerGit, "--force-with-lease"},
	{"git push origin +main", DangerGit, "+refspec"},
	{"git push origin +HEAD:main", DangerGit, "+refspec"},
	{"git push origin :old-branch", DangerGit, ":ref"},
	{"git push --delete origin old", DangerGit, "--delete"},
	{"git push --mirror backup", DangerGit, "--mirror"},
	{"git push $FLAGS origin main", DangerGit, "only known at run time"},
	{"git branch -D old", DangerGit, "git branch -D"},
	{"git branch -d --force old", DangerGit, "git branch --force"},
	{"git branch -M main", DangerGit, "git branch -M"},
	{"git branch -f main HEAD~3", DangerGit, "git branch --force"},
	{"git stash drop", DangerGit, "git stash drop"},
	{"git stash clear", DangerGit, "git stash clear"},
	{"git reflog expire --expire=now --all", DangerGit, "git reflog expire"},
	{"git update-ref -d refs/heads/x", DangerGit, "git update-ref"},
	{"git filter-branch --tree-filter 'rm x' HEAD", DangerGit, "git filter-branch"},
	{"git $SUB --hard", DangerGit, "only known at run time"},
	{"git -c alias.x='reset --hard' x", DangerGit, "alias"},
	{"git status && git reset --hard", DangerGit, "git reset --hard"},
	{"sudo git push -f", DangerPrivilege, "sudo"},
	{"git reset HEAD~1", "", ""},
	{"git reset --soft HEAD~1", "", ""},
	{"git clean -n", "", ""},
	{"git clean -fn", "", ""},
	{"git push", "", ""},
	{"git push origin main", "", ""},
	{"git push -u origin feature", "", ""},
	{"git push --force --dry-run", "", ""},
	{"git branch -d merged", "", ""},
	{"git branch new", "", ""},
	{"git stash", "", ""},
	{"git stash pop", "", ""},
	{"git log --format=%H", "", ""},
	{"git commit -m 'reset --hard'", "", ""},
	{"echo git push --force", "", ""},
}

func init() {
	seen := map[string]bool{}
	for _, c := range dangerCases {
		if seen[c.cmd] {
			panic(fmt.Sprintf("duplicate danger case %q", c.cmd))
		}
		seen[c.cmd] = true
	}
}

// TestDangerousCommand: every dangerous command of the table is flagged
// with its kind and name; every control is not.
func TestDangerousCommand(t *testing.T) {
	t.Parallel()
	kinds := map[string]int{}
	for _, c := range dangerCases {
		t.Run(c.cmd, func(t *testing.T) {
			a := Analyze(c.cmd, testCfg)
			if f := a.Failure(); f != "" {
				t.Fatalf("analysis failed: %s", f)
			}
			d, ok := a.DangerousCommand()
			if c.kind == "" {
				if ok {
					t.Fatalf("flagged %+v, want nothing", d)
				}
				return
			}
			if !ok || d.Kind != c.kind || !strings.Contains(d.Name, c.name) {
				t.Fatalf("DangerousCommand = %+v, %v; want kind %q name ~%q", d, ok, c.kind, c.name)
			}
			if d.Command == "" {
				t.Error("no command named")
			}
		})
		kinds[c.kind]++
	}
	for _, k := range []string{DangerPrivilege, DangerSystem, DangerDevice, DangerGit, ""} {
		if kinds[k] < 8 {
			t.Errorf("only %d cases of kind %q", kinds[k], k)
		}
	}
}

// TestCheckDangerous: in Check a dangerous command is a bypass-immune
// ASK naming the command and the check, in every mode the tool check
// runs in (the engine turns it into a DENY in dont_ask and explore, and
// skips it in bypass); accept_edits does not auto-allow a sudo'd
// filesystem command.
func TestCheckDangerous(t *testing.T) {
	t.Parallel()
	for _, mode := range []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModeDontAsk, permission.ModeBypass} {
		for _, cmd := range []string{"sudo touch x", "git reset --hard", "chown root x", "modprobe nbd", "wipefs -a /dev/sdb"} {
			d := Analyze(cmd, testCfg).Check(mode)
			if d.Behavior != permission.Ask || !d.BypassImmune || !strings.HasPrefix(d.Reason, "Safety check: dangerous command (") ||
				!strings.Contains(d.Message, "`"+cmd+"`") || !strings.Contains(d.Message, "no allow rule can silence it") {
				t.Errorf("%s %q: %+v", mode, cmd, d)
			}
		}
	}
}

// TestDangerousCommandsFromPolicy: the policy's patterns are matched like
// a deny rule's content, through wrappers and compound commands, and only
// when set.
func TestDangerousCommandsFromPolicy(t *testing.T) {
	t.Parallel()
	cfg := testCfg
	cfg.DangerousCommands = []string{"terraform destroy:*", "kubectl delete *"}
	for _, c := range []struct {
		cmd  string
		want string
	}{
		{"terraform destroy -auto-approve", "terraform destroy:*"},
		{"cd infra && terraform destroy", "terraform destroy:*"},
		{"timeout 60 terraform destroy", "terraform destroy:*"},
		{"kubectl delete pod x", "kubectl delete *"},
		{"terraform plan", ""},
		{"kubectl get pods", ""},
	} {
		d, ok := Analyze(c.cmd, cfg).DangerousCommand()
		if ok != (c.want != "") || ok && (d.Kind != DangerPolicy || d.Name != c.want) {
			t.Errorf("%q: %+v %v, want pattern %q", c.cmd, d, ok, c.want)
		}
		if c.want != "" {
			if _, ok := Analyze(c.cmd, testCfg).DangerousCommand(); ok {
				t.Errorf("%q flagged without the policy's patterns", c.cmd)
			}
		}
	}
}
