package actions

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documentation is checked against the tree it describes: a relative
// link in a Markdown page must name a file that exists (and, with a
// fragment, a heading of that page), a doc link in a Go comment
// ([Registry.Run], [sqlstore.Store]) must name a declared identifier, and
// a name such as actions.NewRegistry written in the README or a docs page
// must be exported by the package it names. CI runs these with the other
// tests, so a rename that forgets a page fails here.

const modulePath = "github.com/actionreg/actions"

// markdownFiles lists the README, the docs pages and the READMEs of the
// test data, as paths relative to the module root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, files, "README.md")
	return files
}

var (
	fence      = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading  = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// proseOf drops the code of a page: a link written inside code is not one.
func proseOf(page string) string {
	return inlineCode.ReplaceAllString(fence.ReplaceAllString(page, ""), "")
}

// anchorsOf returns the fragments GitHub gives a page's headings: lower
// case, punctuation other than '-' and '_' dropped, spaces as '-',
// repeated headings numbered.
func anchorsOf(page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(fence.ReplaceAllString(page, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestMarkdownLinksResolve follows every relative link of every Markdown
// file: the target exists, and a fragment names one of its headings.
func TestMarkdownLinksResolve(t *testing.T) {
	files := markdownFiles(t)
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range mdLink.FindAllStringSubmatch(proseOf(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			p, frag, _ := strings.Cut(target, "#")
			resolved := file
			if p != "" {
				resolved = path.Join(path.Dir(file), p)
			}
			info, err := os.Stat(resolved)
			if !assert.NoError(t, err, "%s: link %q: no such file", file, target) {
				continue
			}
			if frag == "" {
				continue
			}
			if !assert.False(t, info.IsDir(), "%s: link %q: a fragment on a directory", file, target) {
				continue
			}
			page, err := os.ReadFile(resolved)
			require.NoError(t, err)
			assert.True(t, anchorsOf(string(page))[frag], "%s: link %q: %s has no heading with that anchor", file, target, resolved)
		}
	}
	assert.Greater(t, checked, 50, "the link pattern finds links")
}

// goPackage is what a package declares: its name, and its exported
// identifiers ("Registry", "Registry.Run", "Options.Store").
type goPackage struct {
	name    string
	symbols map[string]bool
	files   []*ast.File
	fset    *token.FileSet
}

// parseDir reads the non-test Go files of one directory.
func parseDir(t *testing.T, dir string) *goPackage {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	pkg := &goPackage{symbols: map[string]bool{}, fset: fset}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		require.NoError(t, err)
		if f.Name.Name == "main" && pkg.name != "" && pkg.name != "main" {
			continue
		}
		pkg.name = f.Name.Name
		pkg.files = append(pkg.files, f)
		addSymbols(pkg.symbols, f)
	}
	return pkg
}

func addSymbols(syms map[string]bool, f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				syms[d.Name.Name] = true
				continue
			}
			syms[recvName(d.Recv.List[0].Type)+"."+d.Name.Name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						syms[n.Name] = true
					}
				case *ast.TypeSpec:
					syms[s.Name.Name] = true
					addMembers(syms, s.Name.Name, s.Type)
				}
			}
		}
	}
}

func addMembers(syms map[string]bool, typ string, x ast.Expr) {
	var list *ast.FieldList
	switch x := x.(type) {
	case *ast.StructType:
		list = x.Fields
	case *ast.InterfaceType:
		list = x.Methods
	default:
		return
	}
	for _, f := range list.List {
		for _, n := range f.Names {
			syms[typ+"."+n.Name] = true
		}
		if len(f.Names) == 0 { // embedded: its name is the field's
			syms[typ+"."+recvName(f.Type)] = true
		}
	}
}

func recvName(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// modulePackages parses every package directory of the repository (test
// data left out), keyed by import path. The nested modules are named by
// their directories, so a directory's import path is the same whichever
// module holds it.
func modulePackages(t *testing.T) map[string]*goPackage {
	t.Helper()
	pkgs := map[string]*goPackage{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		base := d.Name()
		if p != "." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "node_modules") {
			return filepath.SkipDir
		}
		pkg := parseDir(t, p)
		if len(pkg.files) > 0 {
			ip := modulePath
			if p != "." {
				ip += "/" + filepath.ToSlash(p)
			}
			pkgs[ip] = pkg
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, pkgs, modulePath)
	return pkgs
}

// outsideSymbols parses the packages outside the module that doc links
// name (the standard library, the SDK), found by the go command.
func outsideSymbols(t *testing.T, paths []string) map[string]*goPackage {
	t.Helper()
	out := map[string]*goPackage{}
	if len(paths) == 0 {
		return out
	}
	sort.Strings(paths)
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{.Dir}}"}, paths...)...)
	b, err := cmd.Output()
	require.NoError(t, err, "go list %v", paths)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		ip, dir, ok := strings.Cut(line, " ")
		require.True(t, ok, line)
		out[ip] = parseDir(t, dir)
	}
	return out
}

type docLink struct {
	where      string
	importPath string // "" for the package the comment is in
	name       string // "Registry" or "Registry.Run"
}

// TestGodocLinksResolve reads every comment of every package of the
// module and checks that each doc link ([Name], [Name.Member],
// [pkg.Name]) names a declared identifier. A bracketed exported name that
// resolves to nothing would render as plain text on pkg.go.dev; it is a
// dead link here.
func TestGodocLinksResolve(t *testing.T) {
	pkgs := modulePackages(t)
	byName := map[string]string{} // package name -> import path, for the module's packages
	for ip, p := range pkgs {
		if p.name != "main" {
			byName[p.name] = ip
		}
	}
	var links []docLink
	outside := map[string]bool{}
	for ip, pkg := range pkgs {
		for _, f := range pkg.files {
			imports := map[string]string{}
			for _, is := range f.Imports {
				p := strings.Trim(is.Path.Value, `"`)
				name := path.Base(p)
				if is.Name != nil {
					name = is.Name.Name
				} else if strings.HasPrefix(name, "v") && strings.Count(p, "/") > 1 && len(name) <= 3 {
					name = path.Base(path.Dir(p)) // a major version suffix
				}
				imports[name] = p
			}
			parser := &comment.Parser{
				LookupPackage: func(name string) (string, bool) {
					if p, ok := imports[name]; ok {
						return p, true
					}
					if p, ok := byName[name]; ok {
						return p, true
					}
					return "", false
				},
				LookupSym: func(recv, name string) bool {
					return ast.IsExported(name) && (recv == "" || ast.IsExported(recv))
				},
			}
			for _, cg := range f.Comments {
				where := pkg.fset.Position(cg.Pos()).String()
				d := parser.Parse(cg.Text())
				walkLinks(d, func(l *comment.DocLink) {
					name := l.Name
					if l.Recv != "" {
						name = l.Recv + "." + name
					}
					lp := l.ImportPath
					if lp == ip {
						lp = ""
					}
					links = append(links, docLink{where: where, importPath: lp, name: name})
					if lp != "" && pkgs[lp] == nil {
						outside[lp] = true
					}
				})
			}
		}
	}
	var paths []string
	for p := range outside {
		paths = append(paths, p)
	}
	others := outsideSymbols(t, paths)
	for _, l := range links {
		target := l.importPath
		var pkg *goPackage
		if target == "" {
			pkg = packageOf(pkgs, l.where)
		} else if pkg = pkgs[target]; pkg == nil {
			pkg = others[target]
		}
		if !assert.NotNil(t, pkg, "%s: [%s]: no package %q", l.where, l.name, target) {
			continue
		}
		if l.name == "" { // [pkg] alone
			continue
		}
		assert.True(t, pkg.symbols[l.name], "%s: doc link [%s] names nothing declared in %s", l.where, l.name, orHere(target))
	}
	assert.Greater(t, len(links), 100, "the comments hold doc links")
}

func orHere(ip string) string {
	if ip == "" {
		return "its own package"
	}
	return ip
}

// packageOf finds the package a comment position belongs to.
func packageOf(pkgs map[string]*goPackage, where string) *goPackage {
	dir := filepath.Dir(strings.SplitN(where, ":", 2)[0])
	ip := modulePath
	if dir != "." {
		ip += "/" + filepath.ToSlash(dir)
	}
	return pkgs[ip]
}

func walkLinks(d *comment.Doc, f func(*comment.DocLink)) {
	var text func([]comment.Text)
	text = func(ts []comment.Text) {
		for _, t := range ts {
			switch t := t.(type) {
			case *comment.DocLink:
				f(t)
			case *comment.Link:
				text(t.Text)
			}
		}
	}
	var blocks func([]comment.Block)
	blocks = func(bs []comment.Block) {
		for _, b := range bs {
			switch b := b.(type) {
			case *comment.Paragraph:
				text(b.Text)
			case *comment.Heading:
				text(b.Text)
			case *comment.List:
				for _, it := range b.Items {
					blocks(it.Content)
				}
			}
		}
	}
	blocks(d.Content)
}

// goName matches a qualified Go name as the pages write it:
// actions.NewRegistry, sqlstore.Options.Readers, mcpserver.AddTools.
var goName = regexp.MustCompile(`\b(actions|codes|sqlstore|mcpserver|pages|profiles|otelactions)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)

// regMethod matches a method called on a registry the way the pages name
// one: reg.Run, reg.Decide.
var regMethod = regexp.MustCompile(`\breg\.([A-Z]\w*)`)

// TestDocNamesExist checks that every name the README and the docs pages
// write as package.Name (in prose, code spans and code blocks) is
// exported by that package today, and every reg.Method a method of
// Registry. docs/api.md is left out: its tables
// name, on purpose, what earlier releases called things.
func TestDocNamesExist(t *testing.T) {
	pkgs := modulePackages(t)
	checked := 0
	for _, file := range markdownFiles(t) {
		if file == "docs/api.md" || strings.HasPrefix(file, "testdata/") {
			continue
		}
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range goName.FindAllStringSubmatch(line, -1) {
				ip := modulePath
				if m[1] != "actions" {
					ip += "/" + m[1]
				}
				pkg := pkgs[ip]
				require.NotNil(t, pkg, m[1])
				checked++
				name := m[2]
				if !assert.True(t, pkg.symbols[name], "%s:%d: %s.%s is not declared", file, i+1, m[1], name) {
					continue
				}
				if m[3] != "" && !pkg.symbols[name+"."+m[3]] && isTypeName(pkg, name) {
					assert.Fail(t, "undeclared member", "%s:%d: %s.%s.%s is not declared", file, i+1, m[1], name, m[3])
				}
			}
			for _, m := range regMethod.FindAllStringSubmatch(line, -1) {
				checked++
				assert.True(t, pkgs[modulePath].symbols["Registry."+m[1]], "%s:%d: reg.%s is no method of Registry", file, i+1, m[1])
			}
		}
	}
	assert.Greater(t, checked, 50, "the pages name Go identifiers")
}

// isTypeName reports whether name is a type with members recorded (a
// value such as identity.SurfaceAI followed by a word is not).
func isTypeName(pkg *goPackage, name string) bool {
	prefix := name + "."
	for s := range pkg.symbols {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// citesOutside matches what a reader of the repository cannot follow: a
// file of the sessions that built it (seeds/, research/, /work/), "the
// reference" or "the seed" they worked from, an issue number of this
// project's own tracker.
var citesOutside = regexp.MustCompile(`(?i)\bseeds/|\bresearch/|/work/|\bthe reference's\b|\bas in the reference\b|\bthe seed's\b|\bplugin sdk seed\b|\bissues? \d+\b`)

// publicIssue is an issue of another public project, named with it, as a
// source is (docs/profiles.md cites provider SDKs' issues).
var publicIssue = regexp.MustCompile(`[\w./-]+ issue \d+`)

// TestDocsCiteNothingOutside reads the README, the docs pages and every
// Go file's comments and strings for citations a reader cannot follow.
func TestDocsCiteNothingOutside(t *testing.T) {
	var files []string
	for _, f := range markdownFiles(t) {
		if !strings.HasPrefix(f, "testdata/") {
			files = append(files, f)
		}
	}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != "." || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && p != "docs_links_test.go" {
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			line = publicIssue.ReplaceAllString(line, "")
			if m := citesOutside.FindString(line); m != "" {
				assert.Fail(t, "a citation a reader cannot follow", "%s:%d: %q", f, i+1, m)
			}
		}
	}
}
