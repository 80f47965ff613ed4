package workflows

import "testing"

// TestSameTeam: the same users, roles and patterns are the same team
// whatever the order they were built in, an empty role list is none, and
// a user, a role or a pattern more or less is another team; no users at
// all is one team however it is written.
func TestSameTeam(t *testing.T) {
	base := func() *Approvers {
		return &Approvers{Users: map[string][]string{"alice": nil, "bob": {"k8s"}}, Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}}}
	}
	same := base()
	same.Users["alice"] = []string{}
	cases := []struct {
		name string
		b    *Approvers
		want bool
	}{
		{"identical", base(), true},
		{"empty role list", same, true},
		{"user removed", &Approvers{Users: map[string][]string{"bob": {"k8s"}}, Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}}}, false},
		{"role granted", &Approvers{Users: map[string][]string{"alice": nil, "bob": nil}, Roles: map[string][]string{"k8s": {"Bash(kubectl:*)"}}}, false},
		{"pattern widened", &Approvers{Users: map[string][]string{"alice": nil, "bob": {"k8s"}}, Roles: map[string][]string{"k8s": {"Bash"}}}, false},
		{"nobody", nil, false},
	}
	for _, c := range cases {
		if got := sameTeam(base(), c.b); got != c.want {
			t.Errorf("%s: sameTeam = %v, want %v", c.name, got, c.want)
		}
	}
	if !sameTeam(nil, &Approvers{}) {
		t.Error("no team and a team without users differ")
	}
}
