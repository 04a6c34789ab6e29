/**
 * The repository's docs/*.md pages as HTML for the console (marked: GitHub-flavoured Markdown, no
 * dependencies). Pages are served at /docs/<name>.md, so the relative links between them work as they
 * do on a code host; a link that leaves docs/ (to the repository's code) is shown as its path, since the
 * console does not serve the repository. Headings get GitHub's anchors, so `changelog.md#versioning`
 * lands where it does there. The pages are ours, not user input; the console's CSP forbids scripts
 * they could carry anyway.
 */
import { Marked, type Tokens } from 'marked';
import { slug } from '../../docs-index/slug.js';

export { slug };

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function isRelative(href: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(href) && !href.startsWith('/') && !href.startsWith('#');
}

export interface RenderedPage {
  title: string;
  html: string;
}

export function renderPage(markdown: string): RenderedPage {
  let title = '';
  const seen = new Map<string, number>();
  const marked = new Marked({
    gfm: true,
    renderer: {
      heading(this: { parser: { parseInline(t: Tokens.Generic[]): string } }, { tokens, depth, text }: Tokens.Heading) {
        const inner = this.parser.parseInline(tokens);
        if (depth === 1 && !title) title = text.replace(/`/g, '');
        let id = slug(text);
        const n = seen.get(id) ?? 0;
        seen.set(id, n + 1);
        if (n > 0) id = `${id}-${n}`;
        return `<h${depth} id="${escapeHtml(id)}">${inner}</h${depth}>\n`;
      },
      link(this: { parser: { parseInline(t: Tokens.Generic[]): string } }, { href, title: t, tokens }: Tokens.Link) {
        const inner = this.parser.parseInline(tokens);
        if (isRelative(href) && href.startsWith('../')) return `<span class="repo-path" title="${escapeHtml(href.replace(/^(\.\.\/)+/, ''))} in the repository">${inner}</span>`;
        return `<a href="${escapeHtml(href)}"${t ? ` title="${escapeHtml(t)}"` : ''}>${inner}</a>`;
      },
    },
    hooks: {
      // Wide tables scroll inside their box instead of widening the page (phones).
      postprocess: (html: string) => html.replace(/<table>/g, '<div class="table-wrap"><table>').replace(/<\/table>/g, '</table></div>'),
    },
  });
  const html = marked.parse(markdown, { async: false }) as string;
  return { title: title || 'facecompute docs', html };
}
