package shell

import "strings"

// Operand extraction: which words of a simple command name the files it
// reads or writes (the operands of file commands, their path-valued
// options, find's starting points). Access and the safety checks both
// read them.

// fsCommand reports whether n is one of the filesystem commands
// ACCEPT_EDITS may auto-allow.
func fsCommand(n string) bool {
	return oneOf(n, "mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed")
}

// pathArgs returns the words of u that name files it modifies: the
// operands of file commands and the targets of write redirections.
// [quirk] The reference also counts chmod's mode, chown's owner and
// sed's script as paths; here they are skipped.
func (u *unit) pathArgs() []word {
	var out []word
	for _, r := range u.redirs {
		if writeRedir(r) {
			out = append(out, r.target)
		}
	}
	if len(u.args) == 0 {
		return out
	}
	args := u.args[1:]
	switch n := u.name(); n {
	case "sed":
		if s := parseSed(args); s.inPlace {
			out = append(out, s.files...)
		}
		return out
	case "find":
		if u.findDelete {
			out = append(out, findStarts(args)...)
		}
		return out
	default:
		valued, skipFirst, ok := fileOperands(n, args)
		if !ok {
			return out
		}
		return operandPaths(out, args, valued, skipFirst, n == "touch")
	}
}

// fileOperands describes the operands of the file command n: the short
// options that take a value, and whether the first operand is not a
// file (chmod's mode, chown's owner, unless --reference gives them). ok
// is false when n is not a file command.
func fileOperands(n string, args []word) (valued string, skipFirst, ok bool) {
	switch n {
	case "rm", "rmdir", "unlink", "tee", "shred":
		return "", false, true
	case "mv", "cp", "ln", "install":
		return "StmogbZ", false, true
	case "mkdir":
		return "mZ", false, true
	case "touch":
		return "dtr", false, true
	case "truncate":
		return "sr", false, true
	case "chmod", "chown", "chgrp":
		return "", !anyArg(args, func(v string) bool { return strings.HasPrefix(v, "--reference") }), true
	}
	return "", false, false
}

// operandPaths appends to out the files named by the arguments of a file
// command: its operands (but the first with skipFirst) and the target
// directories of its options (-t DIR, --target-directory=DIR; touch's -t
// is a time).
func operandPaths(out, args []word, valued string, skipFirst, touch bool) []word {
	endOpts := false
	for i := 0; i < len(args); i++ {
		v := args[i].val
		if !endOpts && v == "--" {
			endOpts = true
			continue
		}
		if !endOpts && strings.HasPrefix(v, "-") && len(v) > 1 && !args[i].dynamic {
			out, i = optionPaths(out, args, i, valued, touch)
			continue
		}
		if skipFirst {
			skipFirst = false
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// optionPaths appends to out the target directory the option args[i]
// names, and returns the index of its last word.
func optionPaths(out, args []word, i int, valued string, touch bool) ([]word, int) {
	v := args[i].val
	if strings.HasPrefix(v, "--") {
		if name, val, ok := strings.Cut(v, "="); ok && name == "--target-directory" {
			out = append(out, withVal(args[i], val))
		}
		return out, i
	}
	for j := 1; j < len(v); j++ {
		if strings.IndexByte(valued, v[j]) >= 0 {
			if j == len(v)-1 && i+1 < len(args) {
				i++
				if v[j] == 't' && !touch {
					out = append(out, args[i])
				}
			}
			break
		}
	}
	return out, i
}

// findStarts returns find's start paths ("." when none are given).
func findStarts(args []word) []word {
	var out []word
	for _, w := range args {
		if strings.HasPrefix(w.val, "-") || w.val == "(" || w.val == "!" {
			break
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		out = append(out, word{val: "."})
	}
	return out
}
