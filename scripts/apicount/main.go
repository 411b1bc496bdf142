// Command apicount counts a package's exported names, as docs/api.md
// reports them: top-level names (types, functions, constants, variables),
// exported methods of exported types, and exported fields of exported
// struct types. Test files are left out.
//
// Usage: go run ./scripts/apicount [-v] DIR...
//
// With -v it also lists every counted name with its file, one per line.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

var verbose = flag.Bool("v", false, "list every counted name with its file")

func main() {
	flag.Parse()
	for _, dir := range flag.Args() {
		top, methods, fields, err := count(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apicount:", err)
			os.Exit(1)
		}
		fmt.Printf("%-24s top-level %3d  methods %3d  fields %3d  total %3d\n", dir, top, methods, fields, top+methods+fields)
	}
}

func count(dir string) (top, methods, fields int, err error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, p := range pkgs {
		for path, f := range p.Files {
			file := filepath.Base(path)
			list := func(kind, name string) {
				if *verbose {
					fmt.Printf("%s\t%s\t%s\n", file, kind, name)
				}
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil {
						if d.Name.IsExported() {
							top++
							list("func", d.Name.Name)
						}
						continue
					}
					if r := recvName(d.Recv.List[0].Type); d.Name.IsExported() && ast.IsExported(r) {
						methods++
						list("method", r+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							top++
							list("type", s.Name.Name)
							if st, ok := s.Type.(*ast.StructType); ok {
								for _, fl := range st.Fields.List {
									for _, n := range fl.Names {
										if n.IsExported() {
											fields++
											list("field", s.Name.Name+"."+n.Name)
										}
									}
									if len(fl.Names) == 0 && ast.IsExported(recvName(fl.Type)) {
										fields++ // an exported embedded type
										list("field", s.Name.Name+"."+recvName(fl.Type))
									}
								}
							}
							if it, ok := s.Type.(*ast.InterfaceType); ok {
								for _, m := range it.Methods.List {
									for _, n := range m.Names {
										if n.IsExported() {
											methods++
											list("method", s.Name.Name+"."+n.Name)
										}
									}
								}
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									top++
									list("value", n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	return top, methods, fields, nil
}

// recvName is the type name of a receiver or embedded field expression.
func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return t.Sel.Name
	}
	return ""
}
