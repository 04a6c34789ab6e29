/** The page shell: header navigation, main landmark, inline styles, and the copy-button script. */
import { html, Html } from './html.js';
import { STYLES } from './styles.js';

export interface LayoutOptions {
  title: string;
  nonce: string;
  csrf: string;
  /** Path of the current page, to mark it in the navigation. */
  current: string;
  /** null for pages that do not know who is calling (error pages): the navigation then offers no account links. */
  signedIn: boolean | null;
  body: Html;
  /** More of the head (a page's own stylesheet), each element carrying the nonce. */
  head?: Html;
  /** More scripts after the body, each carrying the nonce. */
  scripts?: Html;
}

/**
 * The Content-Security-Policy of every page: nothing but this page's own inline style and script (and
 * the stylesheets and scripts it names with the same nonce). `fetches` lets the page's script fetch
 * from the console itself: the API reference reads /openapi.json, Try it the account and its keys;
 * `connectTo` adds the origins it may also call (Try it: the gateway's). No other page fetches anything.
 */
export function pageCsp(nonce: string, opts: { fetches?: boolean; connectTo?: readonly string[] } = {}): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    ...(opts.fetches ? [["connect-src 'self'", ...(opts.connectTo ?? [])].join(' ')] : []),
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

// Copies the text of the element named by data-copy and says so to screen readers.
const COPY_SCRIPT = `document.querySelectorAll('[data-copy]').forEach(function (b) {
  b.addEventListener('click', function () {
    var el = document.getElementById(b.getAttribute('data-copy'));
    var status = document.getElementById(b.getAttribute('data-copy') + '-status');
    navigator.clipboard.writeText(el.textContent).then(function () {
      b.textContent = 'Copied'; if (status) status.textContent = 'Copied to the clipboard.';
    }, function () {
      var r = document.createRange(); r.selectNodeContents(el); var s = getSelection(); s.removeAllRanges(); s.addRange(r);
      if (status) status.textContent = 'Press Ctrl+C to copy the selected text.';
    });
  });
});`;

function navLink(href: string, label: string, current: string): Html {
  return html`<a href="${href}"${current === href ? html` aria-current="page"` : ''}>${label}</a>`;
}

export function layout(o: LayoutOptions): Html {
  const nav =
    o.signedIn === null
      ? html`${navLink('/', 'Console', o.current)}${navLink('/docs/', 'Docs', o.current)}`
      : o.signedIn
        ? html`${navLink('/account', 'Account', o.current)}${navLink('/keys', 'API keys', o.current)}${navLink('/mcp', 'MCP', o.current)}${navLink('/try', 'Try it', o.current)}${navLink('/usage', 'Usage', o.current)}${navLink('/docs/', 'Docs', o.current)}`
        : html`${navLink('/signin', 'Sign in', o.current)}${navLink('/signup', 'Sign up', o.current)}${navLink('/docs/', 'Docs', o.current)}`;
  // Outside the navigation landmark: it is an action, and on a phone it shares the brand's row.
  const signOut = o.signedIn
    ? html`<form class="signout" method="post" action="/signout"><input type="hidden" name="_csrf" value="${o.csrf}"><button type="submit">Sign out</button></form>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${o.title} · facecompute console</title>
<style nonce="${o.nonce}">${new Html(STYLES)}</style>
${o.head ?? ''}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><div class="inner"><a class="brand" href="/">facecompute</a><nav aria-label="Main">${nav}</nav>${signOut}</div></header>
<main id="main">
${o.body}
</main>
<script nonce="${o.nonce}">${new Html(COPY_SCRIPT)}</script>
${o.scripts ?? ''}
</body>
</html>`;
}
