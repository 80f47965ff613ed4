package grep

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/backend"
)

// filter applies ripgrep's file selection: --glob overrides first,
// then .gitignore/.ignore/.rgignore files found in the tree, then --type.
type filter struct {
	overrides []rule // from --glob, last match wins
	whitelist bool   // some --glob is positive
	typeGlobs []string
}

// rule is one gitignore-style pattern.
type rule struct {
	base    string // directory (relative to the root) the rule applies below
	pattern string // doublestar pattern relative to base
	negate  bool   // ! rule: re-include (ignore files) or exclude (globs)
	dirOnly bool
}

func newFilter(globs, typeGlobs []string) *filter {
	f := &filter{typeGlobs: typeGlobs}
	for _, d := range vcsDirs() {
		f.overrides = append(f.overrides, parseRule("", "!"+d))
	}
	for _, g := range globs {
		r := parseRule("", g)
		if !r.negate {
			f.whitelist = true
		}
		f.overrides = append(f.overrides, r)
	}
	return f
}

// parseRule parses one gitignore line relative to base; it returns
// a zero rule for blanks and comments.
func parseRule(base, line string) rule {
	line = strings.TrimRight(line, " \t\r")
	if line == "" || strings.HasPrefix(line, "#") {
		return rule{}
	}
	r := rule{base: base}
	if strings.HasPrefix(line, "!") {
		r.negate, line = true, line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return rule{}
	}
	if strings.Contains(line, "/") {
		line = strings.TrimPrefix(line, "/")
	} else {
		line = "**/" + line
	}
	r.pattern = line
	return r
}

// match reports whether the rule matches rel (relative to the root).
func (r rule) match(rel string, isDir bool) bool {
	if r.pattern == "" || (r.dirOnly && !isDir) {
		return false
	}
	if r.base != "" {
		if !strings.HasPrefix(rel, r.base+"/") {
			return false
		}
		rel = rel[len(r.base)+1:]
	}
	return doublestar.MatchUnvalidated(r.pattern, rel)
}

// maxIgnoreBytes bounds one ignore file the Go engine reads; a larger
// one is not read.
const maxIgnoreBytes = 1 << 20

// walkFiltered walks root and calls found for every file ripgrep would
// search, in ripgrep --sort path order.
func walkFiltered(ctx context.Context, b backend.Backend, root string, f *filter, maxEntries int, found func(rel string, size int64)) error {
	seen := 0
	var walk func(dir, rel string, rules []rule) error
	walk = func(dir, rel string, rules []rule) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := b.ListDir(ctx, dir)
		if err != nil {
			if rel == "" || ctx.Err() != nil {
				return err
			}
			return nil
		}
		// Ignore files of this directory, lowest precedence first.
		for _, name := range []string{".gitignore", ".ignore", ".rgignore"} {
			if !slices.ContainsFunc(entries, func(e backend.FileInfo) bool { return e.Name == name && !e.IsDir }) {
				continue
			}
			data, err := backend.ReadFileLimit(ctx, b, path.Join(dir, name), maxIgnoreBytes)
			if err != nil {
				continue
			}
			rules = slices.Clip(rules)
			for _, line := range strings.Split(string(data), "\n") {
				if r := parseRule(rel, line); r.pattern != "" {
					rules = append(rules, r)
				}
			}
		}
		for _, e := range entries {
			if seen++; seen > maxEntries {
				return errEntries
			}
			r := e.Name
			if rel != "" {
				r = rel + "/" + e.Name
			}
			if !f.include(r, e.IsDir, rules) {
				continue
			}
			if e.IsDir {
				if err := walk(path.Join(dir, e.Name), r, rules); err != nil {
					return err
				}
			} else {
				found(r, e.Size)
			}
		}
		return nil
	}
	return walk(root, "", nil)
}

// include decides whether an entry is searched (files) or descended
// into (directories).
func (f *filter) include(rel string, isDir bool, rules []rule) bool {
	for i := len(f.overrides) - 1; i >= 0; i-- {
		if o := f.overrides[i]; o.match(rel, isDir) {
			return !o.negate
		}
	}
	if f.whitelist && !isDir {
		return false
	}
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].match(rel, isDir) {
			if !rules[i].negate {
				return false
			}
			break
		}
	}
	if isDir || len(f.typeGlobs) == 0 {
		return true
	}
	base := path.Base(rel)
	for _, g := range f.typeGlobs {
		if doublestar.MatchUnvalidated(g, base) {
			return true
		}
	}
	return false
}

// types is the subset of ripgrep's file types the Go engine knows.
func types() map[string][]string {
	return map[string][]string{
		"c":          {"*.[chH]", "*.[chH].in", "*.cats"},
		"cpp":        {"*.[ChH]", "*.cc", "*.[ch]pp", "*.[ch]xx", "*.hh", "*.inl", "*.[ChH].in", "*.cc.in", "*.[ch]pp.in", "*.[ch]xx.in", "*.hh.in"},
		"cs":         {"*.cs"},
		"css":        {"*.css", "*.scss"},
		"docker":     {"*Dockerfile*"},
		"go":         {"*.go"},
		"h":          {"*.h", "*.hh", "*.hpp"},
		"html":       {"*.htm", "*.html", "*.ejs"},
		"java":       {"*.java", "*.jsp", "*.jspx", "*.properties"},
		"js":         {"*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"},
		"json":       {"*.json", "composer.lock"},
		"kotlin":     {"*.kt", "*.kts"},
		"lua":        {"*.lua"},
		"make":       {"[Gg][Nn][Uu]makefile", "[Mm]akefile", "[Gg][Nn][Uu]makefile.am", "[Mm]akefile.am", "[Gg][Nn][Uu]makefile.in", "[Mm]akefile.in", "*.mk", "*.mak"},
		"markdown":   {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
		"md":         {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
		"php":        {"*.php", "*.php3", "*.php4", "*.php5", "*.phtml"},
		"proto":      {"*.proto"},
		"py":         {"*.py", "*.pyi"},
		"python":     {"*.py", "*.pyi"},
		"rb":         {"Gemfile", "*.gemspec", ".irbrc", "Rakefile", "*.rb"},
		"ruby":       {"Gemfile", "*.gemspec", ".irbrc", "Rakefile", "*.rb"},
		"rust":       {"*.rs"},
		"sh":         {"*.bash", "*.bashrc", ".bash_login", ".bash_logout", ".bash_profile", "*.zsh", ".zshenv", ".zlogin", ".zlogout", ".zprofile", ".zshrc", "*.sh", ".profile", ".kshrc", ".cshrc", "*.csh", ".login", ".logout", "*.ksh", "*.tcsh"},
		"sql":        {"*.sql", "*.psql"},
		"swift":      {"*.swift"},
		"toml":       {"*.toml", "Cargo.lock"},
		"ts":         {"*.ts", "*.tsx", "*.cts", "*.mts"},
		"typescript": {"*.ts", "*.tsx", "*.cts", "*.mts"},
		"txt":        {"*.txt"},
		"xml":        {"*.xml", "*.xml.dist", "*.dtd", "*.xsl", "*.xslt", "*.xsd", "*.xjb", "*.rng", "*.sch", "*.xhtml"},
		"yaml":       {"*.yaml", "*.yml"},
	}
}
