package shell

import "strings"

// optSpec lists the options of a read-only command that keep it
// read-only. Every option of the command falls in one of four classes:
//
//   - harmless: listed here (short letters in flags and vals, long names
//     in longs); a name in longs ending in "=" takes a value;
//   - writes a file, runs another program, or reads configuration able
//     to do either: listed in bad with the reason, so the message can
//     name it;
//   - anything else is unknown, and an unknown option makes the command
//     ask.
//
// Short letters in vals take a value (attached or as the next word).
type optSpec struct {
	flags string
	vals  string
	// longs and bad are space-separated lists with a leading and a
	// trailing space (constant strings: looking one up allocates
	// nothing); a bad entry is "OPTION=CLASS", the class one of w (writes),
	// x (runs a program), c (reads configuration), s (shell state).
	longs string
	bad   string
	// paths: the operands are files the command reads; pattern: the first
	// operand is a pattern, not a file (grep); cwd: the command reads the
	// working directory when no operand names a path.
	paths, pattern, cwd bool
	// anyDynamic: no option of the command can write or run anything,
	// so a variable in option position is harmless (echo).
	anyDynamic bool
	// plusCmds: a "+…" word runs the pager's own commands (less, more),
	// which can start a shell.
	plusCmds bool
}

// Reasons an option is not read-only.
const (
	whyWrites  = "writes a file"
	whyExec    = "runs another program"
	whyConfig  = "reads configuration that can run programs"
	whyState   = "changes the shell's state"
	whyRefs    = "creates or deletes git refs"
	whyNetwork = "contacts a remote (and may run ssh)"
)

// readOnlySpec returns the options of a command of the read-only list,
// and whether name is on it. The list is split by kind: shell builtins
// and small utilities, commands reading files and directories, and text
// tools.
func readOnlySpec(name string) (optSpec, bool) {
	if s, ok := builtinSpec(name); ok {
		return s, true
	}
	if s, ok := fileSpec(name); ok {
		return s, true
	}
	return textSpec(name)
}

// builtinSpec is readOnlySpec for shell builtins and small utilities
// (echo, pwd, id, which, cd, ...).
func builtinSpec(name string) (optSpec, bool) {
	switch name {

	case "echo":
		return optSpec{flags: "neE", anyDynamic: true}, true
	case "printf":
		return optSpec{bad: " -v=s "}, true
	case "pwd":
		return optSpec{flags: "LP"}, true
	case "true", "false", ":", "whoami":
		return optSpec{}, true
	case "id":
		return optSpec{flags: "gGnruzZa", longs: " group groups name real user zero context "}, true
	case "uname":
		return optSpec{flags: "asnrvmpio", longs: " all kernel-name nodename kernel-release kernel-version machine processor hardware-platform operating-system "}, true
	case "basename":
		return optSpec{flags: "az", vals: "s", longs: " multiple suffix= zero "}, true
	case "dirname":
		return optSpec{flags: "z", longs: " zero "}, true
	case "which":
		return optSpec{flags: "as", longs: " all "}, true
	case "whereis":
		return optSpec{flags: "bmsul", vals: "BMSf"}, true
	case "type":
		return optSpec{flags: "afptP"}, true
	case "cd":
		return optSpec{flags: "LPe@", paths: true}, true
	}
	return optSpec{}, false
}

// fileSpec is readOnlySpec for commands that read files and
// directories (cat, head, ls, stat, du, tree, ...).
func fileSpec(name string) (optSpec, bool) {
	switch name {
	case "cat", "tac":
		return optSpec{flags: "AbeEnstTuv", vals: "rs", longs: " show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting before regex separator= ", paths: true}, true
	case "head", "tail":
		return optSpec{flags: "qvzfF0123456789", vals: "ncs", longs: " bytes= lines= quiet silent verbose zero-terminated follow retry sleep-interval= pid= max-unchanged-stats= ", paths: true}, true
	case "wc":
		return optSpec{flags: "cmlLw", longs: " bytes chars lines max-line-length words files0-from= total= ", paths: true}, true
	case "stat":
		return optSpec{flags: "LftZ", vals: "c", longs: " dereference file-system format= printf= terse cached= ", paths: true}, true
	case "file":
		return optSpec{flags: "bcEhiIkLlNnprsSvz0", vals: "eFfP", longs: " brief mime mime-type mime-encoding no-dereference dereference keep-going raw special-files uncompress no-buffer print0 separator= files-from= exclude= extension apple preserve-date no-pad parameter= ",
			bad: " -m=c --magic-file=c -C=w --compile=w -z=x -Z=x --uncompress-noreport=x ", paths: true}, true
	case "ls":
		return optSpec{flags: "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1", vals: "ITw", longs: " all almost-all author escape block-size= ignore-backups color color= directory dired classify file-type format= full-time group-directories-first no-group human-readable si dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink hyperlink= indicator-style= inode ignore= kibibytes literal numeric-uid-gid hide-control-chars show-control-chars quote-name quoting-style= reverse recursive size sort= time= time-style= tabsize= width= context zero ", paths: true, cwd: true}, true
	case "realpath", "readlink":
		return optSpec{flags: "eEfmLPqszvn", longs: " canonicalize canonicalize-existing canonicalize-missing logical physical quiet strip no-symlinks zero relative-to= relative-base= no-newline silent verbose ", paths: true}, true
	case "du":
		return optSpec{flags: "0abcDhHklLmPsSx", vals: "BdtX", longs: " null all apparent-size block-size= bytes total dereference-args max-depth= human-readable inodes dereference no-dereference count-links separate-dirs si summarize threshold= time time= time-style= exclude-from= exclude= one-file-system ", paths: true, cwd: true}, true
	case "df":
		return optSpec{flags: "ahHiklPTv", vals: "Btx", longs: " all block-size= human-readable si inodes local no-sync output output= portability print-type total type= exclude-type= ", paths: true}, true
	case "md5sum", "sha1sum", "sha256sum", "sha512sum":
		return optSpec{flags: "bctwz", longs: " binary check tag text zero ignore-missing quiet status strict warn ", paths: true}, true
	case "tree":
		return optSpec{flags: "adlfxACDFgGhiNnpqQrsStuUvJX", vals: "LPIH", longs: " noreport charset= filelimit= dirsfirst filesfirst du si prune matchdirs ignore-case gitignore info sort= timefmt= inodes device nolinks hintro= houtro= ",
			bad: " -o=w -R=w --fromfile=c --infofile=c --gitfile=c ", paths: true, cwd: true}, true
	}
	return optSpec{}, false
}

// textSpec is readOnlySpec for text tools: searching, paging,
// comparing and transforming (grep, rg, less, diff, cut, sort, ...).
func textSpec(name string) (optSpec, bool) {
	switch name {
	case "grep", "egrep", "fgrep":
		return optSpec{flags: "EFGPiywxzsvVcLlHhnbTqoUrRIaZ0123456789", vals: "ABCDdefm", longs: " extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case word-regexp line-regexp null-data no-messages invert-match version help max-count= byte-offset line-number no-line-number line-buffered with-filename no-filename label= only-matching quiet silent binary-files= text devices= directories= exclude= exclude-from= exclude-dir= include= recursive dereference-recursive files-without-match files-with-matches count initial-tab null before-context= after-context= context= color color= colour colour= binary ", paths: true, pattern: true}, true
	case "rg":
		return optSpec{flags: "iSsFwxvcloqnNHUPaLuj0123456789e.", vals: "ABCegtTmMr", longs: " regexp= file= glob= iglob= type= type-not= ignore-case smart-case case-sensitive fixed-strings word-regexp line-regexp invert-match count count-matches files-with-matches files-without-match only-matching quiet line-number no-line-number with-filename no-filename hidden no-ignore no-ignore-vcs no-ignore-parent no-ignore-dot no-ignore-global follow max-count= max-depth= max-filesize= max-columns= context= before-context= after-context= json vimgrep heading no-heading color= colors= files type-list sort= sortr= multiline multiline-dotall pcre2 text binary null trim stats column no-messages replace= unrestricted threads= byte-offset passthru no-config crlf encoding= engine= glob-case-insensitive field-match-separator= field-context-separator= path-separator= ignore-file-case-insensitive one-file-system word version help debug trace no-unicode auto-hybrid-regex dfa-size-limit= regex-size-limit= line-regexp mmap no-mmap include-zero max-columns-preview ",
			bad: " --pre=x --pre-glob=x -z=x --search-zip=x --hostname-bin=x --ignore-file=c --type-add=c ", paths: true, pattern: true, cwd: true}, true
	case "more":
		return optSpec{flags: "dlfpcsu", vals: "n", longs: " silent logical no-pause print-over clean-print squeeze plain lines= ", paths: true, plusCmds: true}, true
	case "less":
		return optSpec{flags: "aBcCdeEfFgGiIJKLmMnNqQrRsSuUVwWX~", vals: "bhjpPtxyz#", longs: " quit-at-eof QUIT-AT-EOF quit-if-one-screen ignore-case IGNORE-CASE LINE-NUMBERS line-numbers RAW-CONTROL-CHARS raw-control-chars chop-long-lines no-init tabs= quiet silent squeeze-blank-lines status-column long-prompt mouse no-lessopen ",
			bad: " -o=w -O=w --log-file=w --LOG-FILE=w -k=c --lesskey-file=c --lesskey-src=c -T=c --tag-file=c ", paths: true, plusCmds: true}, true
	case "diff":
		return optSpec{flags: "abBdeEfhHiNnpqrsStTuvwyZ0123456789", vals: "CDFILSUWx", longs: " normal brief report-identical-files context context= unified unified= ed rcs side-by-side width= left-column suppress-common-lines show-c-function show-function-line= label= expand-tabs initial-tab tabsize= suppress-blank-empty new-file unidirectional-new-file ignore-case ignore-file-name-case no-ignore-file-name-case ignore-tab-expansion ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines ignore-matching-lines= text strip-trailing-cr recursive starting-file= exclude= exclude-from= from-file= to-file= minimal horizon-lines= speed-large-files color color= palette= line-format= old-line-format= new-line-format= unchanged-line-format= old-group-format= new-group-format= changed-group-format= unchanged-group-format= no-dereference ", paths: true}, true
	case "cmp":
		return optSpec{flags: "blsz", vals: "inI", longs: " print-bytes ignore-initial= verbose bytes= quiet silent ", paths: true}, true
	case "nl":
		return optSpec{flags: "p", vals: "bdfhilnsvw", longs: " body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= join-blank-lines= number-format= no-renumber number-separator= starting-line-number= number-width= ", paths: true}, true
	case "cut":
		return optSpec{flags: "nsz", vals: "bcdf", longs: " bytes= characters= delimiter= fields= complement only-delimited output-delimiter= zero-terminated ", paths: true}, true
	case "uniq":
		// A second operand is uniq's OUTPUT file: see uniqOutput.
		return optSpec{flags: "cdDiuz", vals: "fsw", longs: " count repeated all-repeated all-repeated= skip-fields= ignore-case skip-chars= unique zero-terminated check-chars= group group= ", paths: true}, true
	case "sort":
		return optSpec{flags: "bdfgiMhnRrVcCsuz", vals: "ktS", longs: " ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort reverse version-sort sort= check check= key= stable buffer-size= field-separator= unique zero-terminated parallel= debug ",
			bad: " -o=w --output=w --compress-program=x -T=w --temporary-directory=w --random-source=c --files0-from=c ", paths: true}, true
	}
	return optSpec{}, false
}

// optIssue is why an option of a read-only command makes it not
// read-only: opt is the option as written, why the class.
type optIssue struct{ opt, why string }

// checkOpts classifies the options of args (without the command name)
// against s. It returns the operands (non-option words), and the first
// option that is not harmless, if any. A dynamic word before "--" may be
// an option, so it is an issue; so is a word produced by brace
// expansion there.
func checkOpts(s optSpec, args []word) (operands []word, issue *optIssue) {
	operands, _, issue = checkOptsVals(s, args)
	return operands, issue
}

// checkOptsVals is checkOpts that also returns the values given to
// options (file names among them: grep -f FILE, wc --files0-from=FILE).
func checkOptsVals(s optSpec, args []word) (operands, values []word, issue *optIssue) {
	endOpts := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.val
		if endOpts {
			operands = append(operands, w)
			continue
		}
		if w.dynamic && !s.anyDynamic && (len(v) == 0 || v[0] == '$') {
			return operands, values, &optIssue{opt: v, why: "may be an option (a variable in option position)"}
		}
		if w.brace && !s.anyDynamic {
			return operands, values, &optIssue{opt: v, why: "may be an option (brace expansion in option position)"}
		}
		if v == "--" {
			endOpts = true
			continue
		}
		if s.plusCmds && len(v) > 1 && v[0] == '+' {
			return operands, values, &optIssue{opt: v, why: "runs pager commands, which can start a shell"}
		}
		if len(v) < 2 || v[0] != '-' {
			operands = append(operands, w)
			continue
		}
		if w.dynamic && !s.anyDynamic {
			return operands, values, &optIssue{opt: v, why: "is only known at run time"}
		}
		if strings.HasPrefix(v, "--") {
			i, values, issue = s.longOpt(args, i, values)
		} else {
			i, values, issue = s.shortOpts(args, i, values)
		}
		if issue != nil {
			return operands, values, issue
		}
	}
	return operands, values, nil
}

// longOpt classifies the long option args[i], appending its value (if
// it takes one) to values, and returns the index of its last word.
func (s optSpec) longOpt(args []word, i int, values []word) (int, []word, *optIssue) {
	w := args[i]
	name, val, hasVal := strings.Cut(w.val, "=")
	if why := badOpt(s.bad, name); why != "" {
		return i, values, &optIssue{opt: name, why: why}
	}
	switch long := name[2:]; {
	case long == "":
	case listHas(s.longs, long, 0):
		return i, values, nil
	case listHas(s.longs, long, '='):
		if hasVal {
			return i, append(values, withVal(w, val)), nil
		}
		return optValue(args, i, values)
	}
	return i, values, &optIssue{opt: name, why: "is not a known read-only option"}
}

// shortOpts classifies the cluster of short options args[i], appending
// the value of one that takes a value (the rest of the word, or the next
// word) to values, and returns the index of its last word.
func (s optSpec) shortOpts(args []word, i int, values []word) (int, []word, *optIssue) {
	w := args[i]
	v := w.val
	for j := 1; j < len(v); j++ {
		c := v[j]
		if why := badShort(s.bad, c); why != "" {
			return i, values, &optIssue{opt: "-" + string(c), why: why}
		}
		if strings.IndexByte(s.vals, c) >= 0 {
			if j == len(v)-1 {
				return optValue(args, i, values)
			}
			return i, append(values, withVal(w, v[j+1:])), nil
		}
		if strings.IndexByte(s.flags, c) < 0 {
			return i, values, &optIssue{opt: "-" + string(c), why: "is not a known read-only option"}
		}
	}
	return i, values, nil
}

// optValue takes the word after args[i] as an option's value, when there
// is one, and returns its index.
func optValue(args []word, i int, values []word) (int, []word, *optIssue) {
	i++
	if i < len(args) {
		values = append(values, args[i])
	}
	return i, values, nil
}

// withVal returns w with the value val, a part of it.
func withVal(w word, val string) word {
	w.val = val
	return w
}

// listHas reports whether the space-separated list holds name. With
// suffix '=', it looks for "name=" instead. It allocates nothing.
func listHas(list, name string, suffix byte) bool {
	for len(list) > 0 {
		list = strings.TrimLeft(list, " ")
		end := strings.IndexByte(list, ' ')
		if end < 0 {
			end = len(list)
		}
		tok := list[:end]
		list = list[end:]
		if suffix == 0 {
			if tok == name {
				return true
			}
		} else if len(tok) == len(name)+1 && tok[len(name)] == suffix && tok[:len(name)] == name {
			return true
		}
	}
	return false
}

// badOpt returns why the option opt is in the bad list ("OPT=CLASS"
// entries), or "".
func badOpt(bad, opt string) string {
	for len(bad) > 0 {
		bad = strings.TrimLeft(bad, " ")
		end := strings.IndexByte(bad, ' ')
		if end < 0 {
			end = len(bad)
		}
		tok := bad[:end]
		bad = bad[end:]
		if len(tok) == len(opt)+2 && tok[len(opt)] == '=' && tok[:len(opt)] == opt {
			return optClass(tok[len(tok)-1])
		}
	}
	return ""
}

// badShort is badOpt for the short option -c.
func badShort(bad string, c byte) string {
	for len(bad) > 0 {
		bad = strings.TrimLeft(bad, " ")
		end := strings.IndexByte(bad, ' ')
		if end < 0 {
			end = len(bad)
		}
		tok := bad[:end]
		bad = bad[end:]
		if len(tok) == 4 && tok[0] == '-' && tok[1] == c && tok[2] == '=' {
			return optClass(tok[3])
		}
	}
	return ""
}

func optClass(c byte) string {
	switch c {
	case 'w':
		return whyWrites
	case 'x':
		return whyExec
	case 'c':
		return whyConfig
	}
	return whyState
}
