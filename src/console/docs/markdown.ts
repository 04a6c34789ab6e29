/**
 * The repository's docs/*.md pages, and the client libraries' READMEs (the SDK pages), as HTML for the
 * console (marked: GitHub-flavoured Markdown, no dependencies). Pages are served at /docs/<name>.md and
 * the SDK pages at /docs/sdk/<language> (SDK_PAGES), and a relative link between any of them is
 * rewritten to where the console serves its target; a link to anything else of the repository (its
 * code) is shown as its path, since the console does not serve the repository. Headings get GitHub's anchors, so `changelog.md#versioning`
 * lands where it does there. The pages are ours, not user input; the console's CSP forbids scripts
 * they could carry anyway.
 */
import { posix } from 'node:path';
import { Marked, type Tokens } from 'marked';
import { slug } from '../../docs-index/slug.js';

export { slug };

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function isRelative(href: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(href) && !href.startsWith('/') && !href.startsWith('#');
}

/** The client libraries' READMEs the console renders, by their path in the repository: /docs/sdk/<language>. */
export const SDK_PAGES: Readonly<Record<string, string>> = { python: 'clients/python/README.md', js: 'clients/js/README.md' };

/**
 * Where the console serves a relative link of the page at `from` (a path in the repository, e.g.
 * `docs/api.md` or `clients/python/README.md`): a docs page, an SDK page, or null (repository code).
 */
export function consoleHref(from: string, href: string): string | null {
  const [path, fragment] = href.split('#') as [string, string | undefined];
  const target = path === '' ? from : posix.normalize(posix.join(posix.dirname(from), path));
  const hash = fragment !== undefined ? `#${fragment}` : '';
  if (target === 'docs/README.md') return `/docs/${hash}`;
  if (/^docs\/[^/]+$/.test(target) || /^docs\/images\/[^/]+$/.test(target)) return `/${target}${hash}`;
  if (target === 'openapi.json') return `/openapi.json${hash}`;
  const sdk = Object.entries(SDK_PAGES).find(([, p]) => p === target);
  if (sdk) return `/docs/sdk/${sdk[0]}${hash}`;
  return null;
}

export interface RenderedPage {
  title: string;
  html: string;
}

/** `from`: where the page is in the repository (docs/<name>.md unless an SDK page), for its relative links. */
export function renderPage(markdown: string, from = 'docs/page.md'): RenderedPage {
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
        if (isRelative(href)) {
          const to = consoleHref(from, href);
          if (to === null) return `<span class="repo-path" title="${escapeHtml(posix.normalize(posix.join(posix.dirname(from), href.split('#')[0]!)))} in the repository">${inner}</span>`;
          // Links between docs pages stay relative, as written (they resolve the same under /docs/).
          if (from.startsWith('docs/') && !href.startsWith('../')) return `<a href="${escapeHtml(href)}"${t ? ` title="${escapeHtml(t)}"` : ''}>${inner}</a>`;
          return `<a href="${escapeHtml(to)}"${t ? ` title="${escapeHtml(t)}"` : ''}>${inner}</a>`;
        }
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
