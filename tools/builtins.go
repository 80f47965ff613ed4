package tools

// Builtins returns a fresh set of the built-in tools, in this order:
// Bash, PowerShell, Read, Write, Edit, Glob, Grep, TaskCreate, TaskGet,
// TaskList, TaskUpdate, AskUser. PowerShell and Grep share one
// ProbeCache, so each backend is probed once per set.
func Builtins() []Tool {
	probes := &ProbeCache{}
	return []Tool{
		Bash{},
		PowerShell{Probes: probes},
		Read{},
		Write{},
		Edit{},
		Glob{},
		Grep{Probes: probes},
		TaskCreate{},
		TaskGet{},
		TaskList{},
		TaskUpdate{},
		AskUser{},
	}
}
