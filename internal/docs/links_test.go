package docs

import (
	"bufio"
	"bytes"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// maxReadmeBytes is the README's size limit: a front door, not the manual.
const maxReadmeBytes = 20480

// repoRoot is the repository root: two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err != nil {
		t.Fatalf("no README.md at the repository root %s: %v", root, err)
	}
	return root
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional "title" after the target.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef matches a reference definition: [label]: target
	refDef = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// codeSpan matches inline code, which holds no links.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// scheme matches a URL scheme such as http:, https: or mailto:.
	scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// stripCode removes fenced code blocks and inline code spans, whose text
// may look like links but is not.
func stripCode(src []byte) string {
	var out strings.Builder
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			out.WriteString("\n")
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			out.WriteString("\n")
			continue
		}
		out.WriteString(codeSpan.ReplaceAllString(line, ""))
		out.WriteString("\n")
	}
	return out.String()
}

// links returns the relative link targets of a Markdown file, without
// their #anchors; absolute URLs (http, https, mailto, …) and links to an
// anchor of the same page are left out.
func links(src []byte) []string {
	text := stripCode(src)
	var raw []string
	for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
		raw = append(raw, m[1])
	}
	for _, m := range refDef.FindAllStringSubmatch(text, -1) {
		raw = append(raw, m[1])
	}
	var out []string
	for _, target := range raw {
		if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
			continue
		}
		if i := strings.IndexAny(target, "#?"); i >= 0 {
			target = target[:i]
		}
		if target == "" {
			continue
		}
		if u, err := url.PathUnescape(target); err == nil {
			target = u
		}
		out = append(out, target)
	}
	return out
}

// walk follows every relative link from README.md through the Markdown
// files it reaches. It returns the set of reached files (paths relative to
// root, slash-separated) and the broken links, one line each.
func walk(root string) (reached map[string]bool, broken []string) {
	reached = map[string]bool{"README.md": true}
	queue := []string{"README.md"}
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			broken = append(broken, page+": "+err.Error())
			continue
		}
		dir := filepath.Dir(filepath.Join(root, filepath.FromSlash(page)))
		for _, target := range links(src) {
			abs := filepath.Clean(filepath.Join(dir, filepath.FromSlash(target)))
			if strings.HasPrefix(target, "/") {
				abs = filepath.Join(root, filepath.FromSlash(target))
			}
			rel, err := filepath.Rel(root, abs)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				broken = append(broken, page+": "+target+": outside the repository")
				continue
			}
			info, err := os.Stat(abs)
			if err != nil {
				broken = append(broken, page+": "+target+": no such file")
				continue
			}
			rel = filepath.ToSlash(rel)
			if info.IsDir() || !strings.HasSuffix(rel, ".md") || reached[rel] {
				reached[rel] = true
				continue
			}
			reached[rel] = true
			queue = append(queue, rel)
		}
	}
	sort.Strings(broken)
	return reached, broken
}

// docPages lists the Markdown files under docs/ that must be reachable:
// every one outside docs/cli/ and, when docs/cli/ exists, its index
// docs/cli/surge.md (the generated pages link each other from there).
func docPages(t *testing.T, root string) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "docs/cli" {
				pages = append(pages, "docs/cli/surge.md")
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".md") {
			pages = append(pages, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(pages)
	return pages
}

func TestRelativeLinksResolve(t *testing.T) {
	_, broken := walk(repoRoot(t))
	for _, b := range broken {
		t.Errorf("broken link: %s", b)
	}
}

func TestEveryDocsPageReachableFromReadme(t *testing.T) {
	root := repoRoot(t)
	reached, _ := walk(root)
	pages := docPages(t, root)
	if len(pages) == 0 {
		t.Fatal("found no Markdown page under docs/")
	}
	for _, page := range pages {
		if !reached[page] {
			t.Errorf("%s is not reachable by links from README.md", page)
		}
	}
}

func TestReadmeSize(t *testing.T) {
	info, err := os.Stat(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > maxReadmeBytes {
		t.Errorf("README.md is %d bytes, over the limit of %d: move detail into docs/ and link it", info.Size(), maxReadmeBytes)
	}
}

// TestLinkExtraction pins what counts as a link, so that the checks above
// cannot pass by finding none.
func TestLinkExtraction(t *testing.T) {
	src := []byte("see [a](docs/a.md#x), ![img](b.png \"t\"), [web](https://x.org/y.md), [m](mailto:a@b),\n" +
		"[same](#anchor), `[code](no.md)`\n" +
		"[c]: c.md\n" +
		"```\n[fenced](no2.md)\n```\n" +
		"[d](d%20e.md)\n")
	got := strings.Join(links(src), " ")
	want := "docs/a.md b.png d e.md c.md"
	if got != want {
		t.Errorf("links() = %q, want %q", got, want)
	}
}

// TestOrphanDetected builds a small tree with an orphaned page and a broken
// link and checks that both are found.
func TestOrphanDetected(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "[guide](docs/guides/g.md) [cli](docs/cli/surge.md)\n")
	write("docs/guides/g.md", "[up](../m.md#sec) [gone](../missing.md)\n")
	write("docs/m.md", "# m\n")
	write("docs/orphan.md", "# nobody links here\n")
	write("docs/cli/surge.md", "[sub](surge_run.md)\n")
	write("docs/cli/surge_run.md", "# run\n")
	write("docs/cli/surge_unlinked.md", "# generated, not checked\n")

	reached, broken := walk(root)
	if len(broken) != 1 || !strings.Contains(broken[0], "../missing.md") {
		t.Errorf("broken = %q, want the one link to ../missing.md", broken)
	}
	var orphans []string
	for _, page := range docPages(t, root) {
		if !reached[page] {
			orphans = append(orphans, page)
		}
	}
	if strings.Join(orphans, " ") != "docs/orphan.md" {
		t.Errorf("orphans = %q, want [docs/orphan.md]", orphans)
	}
}
