package mongostore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// resolveEvent spells the root package's action names: every action the
// Service records (the Action constants of audit.go) has its case there,
// and a crash case of TestEventCrashPoints, and nothing else does.
func TestResolveEventKnowsEveryAction(t *testing.T) {
	root := rootActions(t)
	require.NotEmpty(t, root)
	require.Equal(t, root, resolvedActions(t), "the cases of resolveEvent")
	var crash []string
	for _, c := range crashCases {
		crash = append(crash, c.action)
	}
	slices.Sort(crash)
	require.Equal(t, root, crash, "the actions of crashCases")
}

// rootActions are the values of the root package's Action constants.
func rootActions(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../audit.go", nil, 0)
	require.NoError(t, err)
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Action") || i >= len(vs.Values) {
					continue
				}
				out = append(out, stringLit(t, vs.Values[i]))
			}
		}
	}
	slices.Sort(out)
	return out
}

// resolvedActions are the strings of the cases of resolveEvent's switch
// on the action.
func resolvedActions(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, 0)
	require.NoError(t, err)
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "resolveEvent" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok {
				return true
			}
			if sel, ok := sw.Tag.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Action" {
				return true
			}
			for _, st := range sw.Body.List {
				for _, e := range st.(*ast.CaseClause).List {
					out = append(out, stringLit(t, e))
				}
			}
			return false
		})
	}
	slices.Sort(out)
	return out
}

func stringLit(t *testing.T, e ast.Expr) string {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	require.True(t, ok && lit.Kind == token.STRING, "a string literal: %#v", e)
	s, err := strconv.Unquote(lit.Value)
	require.NoError(t, err)
	return s
}
