package shell

import "strings"

// gitHistoryOpts are the options of the history and diff commands (log,
// show, diff, rev-list, shortlog, whatchanged) known to only read and
// format: selection, formatting and diff options. Options that write or
// run programs are refused earlier (gitBadOpt); any other option makes
// the command ask.
const gitHistoryOpts = " --oneline --graph --decorate --no-decorate --decorate-refs --decorate-refs-exclude --stat --numstat" +
	" --shortstat --name-only --name-status --summary --patch -p -u --no-patch -s --format --pretty --abbrev-commit" +
	" --no-abbrev-commit --abbrev --no-abbrev --date --relative-date --author --committer --grep --since --until --after" +
	" --before --max-count -n --skip --reverse --all --branches --tags --remotes --merges --no-merges --first-parent" +
	" --follow --color --no-color --word-diff --word-diff-regex --color-words --color-moved --cached --staged" +
	" --ignore-all-space -w --ignore-space-change -b --ignore-space-at-eol --ignore-blank-lines --ignore-cr-at-eol" +
	" --unified -U --minimal --patience --histogram --anchored --diff-algorithm --diff-filter -M -C -D --find-renames" +
	" --find-copies --find-copies-harder --no-renames --irreversible-delete --check --full-index --binary --raw" +
	" --left-right --cherry-pick --cherry-mark --cherry --boundary --topo-order --date-order --author-date-order" +
	" --max-parents --min-parents --no-min-parents --no-max-parents --no-walk --do-walk --count --parents --children" +
	" --full-history --dense --sparse --simplify-merges --ancestry-path --simplify-by-decoration --source --log-size" +
	" --pickaxe-all --pickaxe-regex -S -G -i --regexp-ignore-case -E --extended-regexp -F --fixed-strings -P" +
	" --perl-regexp --basic-regexp --all-match --invert-grep --quiet -q --exit-code --stat-width --stat-name-width" +
	" --stat-count --stat-graph-width --dirstat -X --cumulative --no-ext-diff --no-textconv --relative --no-relative" +
	" -z --mailmap --no-mailmap --use-mailmap --no-use-mailmap --encoding --expand-tabs --no-expand-tabs" +
	" --no-notes --show-linear-break --abbrev-commit --no-prefix --src-prefix --dst-prefix --line-prefix -R -a --text" +
	" --ita-invisible-in-index --ita-visible-in-index --merge --not --single-worktree --exclude --in-commit-order" +
	" --first-parent --remerge-diff --diff-merges -m -c --cc --dd --combined-all-paths -t --root --no-color-moved" +
	" --break-rewrites -B --output-indicator-new --output-indicator-old --output-indicator-context --name-status" +
	" --ignore-submodules --submodule --ws-error-highlight --inter-hunk-context -W --function-context" +
	" --summary -e --email -w --group --numbered "

// gitSubOpts are the known read-only options of the other read-only git
// subcommands.
var gitSubOpts = map[string]string{
	"status": " -s --short -b --branch --porcelain --long -v --verbose -u --untracked-files --ignored" +
		" --ignore-submodules --column --no-column --ahead-behind --no-ahead-behind --renames --no-renames" +
		" --find-renames -z --show-stash --null ",
	"ls-files": " -c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u --unmerged -k" +
		" --killed -z -t -v -f --full-name --abbrev --exclude -x --exclude-standard --error-unmatch" +
		" --recurse-submodules --eol --deduplicate --format --directory --no-empty-directory --sparse ",
	"ls-tree": " -d -r -t -l --long -z --name-only --name-status --object-only --full-name --full-tree --abbrev --format ",
	"cat-file": " -t -s -e -p --batch --batch-check --batch-all-objects --follow-symlinks --buffer --unordered" +
		" --allow-unknown-type -Z ",
	"rev-parse": " --abbrev-ref --short --verify --quiet -q --show-toplevel --git-dir --is-inside-work-tree" +
		" --is-inside-git-dir --is-bare-repository --show-prefix --show-cdup --symbolic --symbolic-full-name --all" +
		" --branches --tags --remotes --git-common-dir --absolute-git-dir --show-superproject-working-tree --default" +
		" --sq --sq-quote --not --since --until --after --before --local-env-vars --path-format --is-shallow-repository" +
		" --shared-index-path --show-object-format --show-ref-format --revs-only --no-revs --flags --no-flags" +
		" --verify --glob --disambiguate --git-path ",
	"describe": " --tags --all --long --abbrev --exact-match --always --dirty --broken --match --exclude --contains" +
		" --first-parent --candidates --debug ",
	"blame": " -L -l -t -s -e -w -M -C --porcelain --line-porcelain -p --incremental --root --show-stats" +
		" --show-name --show-number -n -f --date -c --abbrev --reverse --first-parent --color-lines --color-by-age" +
		" --minimal --since --score-debug --show-email --no-progress ",
	"grep": " -i --ignore-case -I -w --word-regexp -v --invert-match -h -H --full-name -E -G -F -P" +
		" --extended-regexp --basic-regexp --fixed-strings --perl-regexp -n --line-number --column -l" +
		" --files-with-matches --name-only -L --files-without-match -z --null -o --only-matching -c --count --color" +
		" --no-color --break --heading -p --show-function -C -A -B --context --after-context --before-context -W" +
		" --function-context -e --and --or --not --all-match -q --quiet --cached --untracked --no-exclude-standard" +
		" --exclude-standard --recurse-submodules --max-depth -r --recursive --no-recursive --threads -a --text" +
		" --max-count -m --no-textconv ",
}

// gitValueShorts are the short options that carry their value attached
// ("-n5", "-U3", "-M50%", "-L10,20").
const gitValueShorts = "nUMCLABSGXlm"

// gitUnknownOpt returns the first option of a read-only git subcommand
// that is not known to only read ("" when all are known). Words after
// "--" are paths.
func gitUnknownOpt(sub string, rest []word) string {
	known := gitSubOpts[sub]
	switch sub {
	case "log", "show", "diff", "rev-list", "shortlog", "whatchanged":
		known = gitHistoryOpts
	}
	if known == "" {
		return ""
	}
	for _, w := range rest {
		v := w.val
		if v == "--" {
			return ""
		}
		if len(v) < 2 || v[0] != '-' {
			continue
		}
		name, _, _ := strings.Cut(v, "=")
		if strings.Contains(known, " "+name+" ") {
			continue
		}
		if !strings.HasPrefix(v, "--") && gitShortKnown(known, v, sub) {
			continue
		}
		return name
	}
	return ""
}

// gitShortKnown accepts a short option word: "-5" (a count, for the
// history commands), an attached value ("-n5"), or a cluster of known
// flags ("-sb").
func gitShortKnown(known, v, sub string) bool {
	body := v[1:]
	if isDigits(body) {
		return known == gitHistoryOpts || sub == "grep"
	}
	if strings.ContainsRune(gitValueShorts, rune(body[0])) && strings.Contains(known, " -"+body[:1]+" ") {
		return true
	}
	for _, c := range body {
		if !strings.Contains(known, " -"+string(c)+" ") {
			return false
		}
	}
	return true
}
