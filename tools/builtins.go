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

// The built-ins say where they come from (Sourcer).

// Source implements Sourcer.
func (Bash) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (PowerShell) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (Read) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (Write) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (Edit) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (Glob) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (Grep) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (TaskCreate) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (TaskGet) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (TaskList) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (TaskUpdate) Source() string { return SourceBuiltin }

// Source implements Sourcer.
func (AskUser) Source() string { return SourceBuiltin }
