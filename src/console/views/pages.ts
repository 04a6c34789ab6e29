/** Bodies of the console's pages. Every form carries the CSRF token; every input has a label. */
import { html, when, type Html } from './html.js';
import type { AccountView, CardView, CreatedKey, FreeCallLimits, KeyView } from '../../accounts/index.js';
import { PASSWORD_MIN } from '../../accounts/validation.js';
import { agentGuide, type AgentUrls } from './agent.js';

export interface Notice {
  kind: 'error' | 'success' | 'warn';
  text: string;
}

function notice(n: Notice | undefined): Html | '' {
  if (!n) return '';
  // Error details are written for the API (lower-case sentences); a page shows them as sentences.
  const text = n.text.charAt(0).toUpperCase() + n.text.slice(1) + (/[.!?]$/.test(n.text) ? '' : '.');
  return html`<div class="alert ${n.kind}" role="${n.kind === 'error' ? 'alert' : 'status'}">${text}</div>`;
}

const csrfField = (csrf: string) => html`<input type="hidden" name="_csrf" value="${csrf}">`;

function credentialsFields(email: string, newPassword: boolean): Html {
  return html`<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${email}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="${newPassword ? 'new-password' : 'current-password'}" required ${newPassword ? html`minlength="${PASSWORD_MIN}" aria-describedby="password-hint"` : ''} maxlength="256">
${newPassword ? html`<p class="hint" id="password-hint">At least ${PASSWORD_MIN} characters.</p>` : ''}`;
}

const calls = (n: number) => `${n} free call${n === 1 ? '' : 's'}`;

export function signupPage(csrf: string, limits: FreeCallLimits, email: string, n?: Notice): Html {
  return html`<div class="narrow">
<h1>Create your account</h1>
${notice(n)}
<section class="card" aria-labelledby="signup-h">
<h2 id="signup-h">Sign up with email</h2>
<p class="muted" data-testid="signup-calls">Active at once, with ${calls(limits.anonymous)} until you follow the link we mail you, then ${calls(limits.account)} in total. Add a card later for ${limits.card} in total.</p>
<form method="post" action="/signup">${csrfField(csrf)}
${credentialsFields(email, true)}
<div class="actions"><button type="submit">Create account</button></div>
</form>
</section>
<section class="card" aria-labelledby="anon-h">
<h2 id="anon-h">Or try it without an email</h2>
<p class="muted" data-testid="anonymous-calls">An anonymous account with ${calls(limits.anonymous)} and one API key. You can add an email later and keep your keys.</p>
<form method="post" action="/signup/anonymous">${csrfField(csrf)}
<div class="actions"><button type="submit" class="secondary">Continue without an email</button></div>
</form>
</section>
<p>Already have an account? <a href="/signin">Sign in</a>.</p>
</div>`;
}

export function signinPage(csrf: string, email: string, n?: Notice): Html {
  return html`<div class="narrow">
<h1>Sign in</h1>
${notice(n)}
<section class="card">
<form method="post" action="/signin">${csrfField(csrf)}
${credentialsFields(email, false)}
<div class="actions"><button type="submit">Sign in</button></div>
</form>
</section>
<p>New here? <a href="/signup">Create an account</a>.</p>
</div>`;
}

const TIER_LABEL = { anonymous: 'Anonymous agent', account: 'Account', card: 'Account with a saved card' } as const;

export function accountPage(csrf: string, a: AccountView, card: CardView | null, limits: FreeCallLimits, n?: Notice): Html {
  const fc = a.free_calls;
  const pct = fc.total === 0 ? 100 : Math.round((fc.used / fc.total) * 100);
  const upgrade =
    a.tier === 'anonymous'
      ? html`<section class="card" aria-labelledby="upgrade-h">
<h2 id="upgrade-h">Add an email and password</h2>
<p class="muted">Turns this anonymous account into a real one with ${calls(limits.account)} in total once you follow the link we mail you. Your keys and usage are kept.</p>
<form method="post" action="/account/upgrade">${csrfField(csrf)}
${credentialsFields('', true)}
<div class="actions"><button type="submit">Upgrade account</button></div>
</form>
</section>`
      : '';
  const verify =
    a.email !== null && !a.email_verified
      ? html`<section class="card" aria-labelledby="verify-h">
<h2 id="verify-h">Verify your email</h2>
<p class="muted">We mailed a link to <strong>${a.email}</strong>. Until it is followed the account has ${calls(limits.anonymous)} in total and one key of each kind; verified, ${calls(limits.account)}.</p>
<form method="post" action="/account/verify-email/resend">${csrfField(csrf)}
<div class="actions"><button type="submit">Send a new link</button></div>
</form>
</section>`
      : '';
  const cardSection =
    a.tier === 'card'
      ? html`<section class="card" aria-labelledby="card-h"><h2 id="card-h">Card</h2>
<p>Saved: <strong>${card?.brand ?? 'card'}</strong>${card?.last4 ? html` ending in <strong>${card.last4}</strong>` : ''}. Your account has ${calls(limits.card)} in total.</p></section>`
      : a.tier === 'account' && a.email_verified
        ? html`<section class="card" aria-labelledby="card-h">
<h2 id="card-h">Add a card</h2>
<p class="muted">Saving a card raises your free calls to ${limits.card} in total. Nothing is charged now.</p>
<form method="post" action="/account/card">${csrfField(csrf)}
<label for="payment_method">Payment-method token</label>
<input id="payment_method" name="payment_method" type="text" required maxlength="255" autocomplete="off" spellcheck="false" aria-describedby="pm-hint" placeholder="pm_…">
<p class="hint" id="pm-hint">The token your payment provider returns for the card (for example <code>pm_card_visa</code> in test mode). Never type a card number here: card numbers go to the provider, not to us.</p>
<div class="actions"><button type="submit">Save card</button></div>
</form>
</section>`
        : '';
  return html`<h1>Account</h1>
${notice(n)}
${verify}
<section class="card" aria-labelledby="summary-h">
<h2 id="summary-h">Summary</h2>
<dl class="facts">
<dt>Tier</dt><dd data-testid="tier">${TIER_LABEL[a.tier]}</dd>
<dt>Email</dt><dd>${a.email ?? html`<span class="muted">none (anonymous)</span>`}</dd>
<dt>Status</dt><dd>${a.status}</dd>
<dt>Created</dt><dd>${when(a.created_at)}</dd>
</dl>
</section>
<section class="card" aria-labelledby="calls-h">
<h2 id="calls-h">Free calls</h2>
<p><strong data-testid="calls-used">${fc.used}</strong> used of <strong data-testid="calls-total">${fc.total}</strong> · <strong data-testid="calls-remaining">${fc.remaining}</strong> left</p>
<progress max="${fc.total}" value="${fc.used}" aria-label="${fc.used} of ${fc.total} free calls used">${pct}%</progress>
<p class="hint">A call is used only when compute ran on REST or MCP (a result, or no face found). Requests refused before compute, capacity refusals and failures on our side cost nothing; get_capabilities and search_docs are free.</p>
</section>
${upgrade}
${cardSection}`;
}

export interface KeysPageOptions {
  csrf: string;
  kind: 'rest' | 'mcp';
  keys: KeyView[];
  created?: CreatedKey;
  notice?: Notice;
  mcpUrl: string;
  baseUrl: string;
  /** Agent mode (?agent=1): instructions for an agent driving a browser, kept across the create form. */
  agent?: AgentUrls;
}

function keyTable(o: KeysPageOptions): Html {
  const action = o.kind === 'rest' ? '/keys' : '/mcp/keys';
  if (o.keys.length === 0) return html`<p class="muted">No keys yet.</p>`;
  // On a phone each row becomes a block of labelled lines (styles.ts); the ARIA roles keep it a
  // table for screen readers, which drop table semantics once the display changes.
  return html`<table class="keys" role="table">
<caption class="sr-only">Your ${o.kind === 'rest' ? 'API' : 'MCP'} keys</caption>
<thead role="rowgroup"><tr role="row"><th scope="col" role="columnheader">Name</th><th scope="col" role="columnheader">Key</th><th scope="col" role="columnheader">Created</th><th scope="col" role="columnheader">Last used</th><th scope="col" role="columnheader">Status</th></tr></thead>
<tbody role="rowgroup">
${o.keys.map(
  (k) => html`<tr role="row" data-key-id="${k.id}">
<td role="cell" class="name" data-label="Name"><span>${k.name}</span></td>
<td role="cell" data-label="Key"><code>${k.prefix}…</code></td>
<td role="cell" class="date" data-label="Created">${when(k.created_at)}</td>
<td role="cell" class="date" data-label="Last used">${when(k.last_used_at)}</td>
<td role="cell" data-label="Status">${
    k.revoked_at
      ? html`<span class="badge revoked" title="${when(k.revoked_at)}">Revoked</span><br><span class="hint">${when(k.revoked_at)}</span>`
      : html`<form method="post" action="${action}/${k.id}/revoke">${csrfField(o.csrf)}<button type="submit" class="danger" aria-label="Revoke key ${k.name}">Revoke</button></form>`
  }</td>
</tr>`,
)}
</tbody>
</table>`;
}

function createdBox(created: CreatedKey | undefined): Html | '' {
  if (!created) return '';
  return html`<div class="alert warn" role="status">
<p><strong>Copy your new key “${created.name}” now.</strong> It is shown only this once; we store only a hash of it.</p>
<div class="secret"><code id="new-key" data-testid="new-key">${created.key}</code><button type="button" data-copy="new-key">Copy</button></div>
<p class="sr-only" id="new-key-status" aria-live="polite"></p>
</div>`;
}

function createForm(o: KeysPageOptions): Html {
  const action = o.kind === 'rest' ? '/keys' : '/mcp/keys';
  const label = o.kind === 'rest' ? 'API key' : 'MCP key';
  return html`<section class="card" aria-labelledby="create-h">
<h2 id="create-h">Create ${o.kind === 'rest' ? 'an API key' : 'an MCP key'}</h2>
<form method="post" action="${action}">${csrfField(o.csrf)}${o.agent ? html`<input type="hidden" name="agent" value="1">` : ''}
<label for="key-name">Name</label>
<input id="key-name" name="name" type="text" required maxlength="100" autocomplete="off" aria-describedby="key-name-hint">
<p class="hint" id="key-name-hint">Something that tells you where it is used, e.g. “laptop” or “billing-service”.</p>
<div class="actions"><button type="submit">Create ${label}</button></div>
</form>
</section>`;
}

export function keysPage(o: KeysPageOptions): Html {
  return html`<h1>API keys</h1>
<p class="muted">REST keys (<code>fc_live_…</code>) work on the REST gateway at <code>${o.baseUrl}</code> only. Send one as <code>Authorization: Bearer &lt;key&gt;</code>.</p>
${notice(o.notice)}
${o.agent ? agentGuide(o.kind, o.created !== undefined, o.agent) : ''}
${createdBox(o.created)}
${createForm(o)}
<section class="card" aria-labelledby="list-h"><h2 id="list-h">Your API keys</h2>${keyTable(o)}</section>`;
}

export function mcpConfigs(mcpUrl: string, key: string): Array<{ id: string; title: string; where: string; text: string }> {
  const header = `Authorization: Bearer ${key}`;
  return [
    {
      id: 'cfg-claude-code',
      title: 'Claude Code',
      where: 'Run in a terminal:',
      text: `claude mcp add --transport http facecompute ${mcpUrl} --header "${header}"`,
    },
    {
      id: 'cfg-cursor',
      title: 'Cursor',
      where: 'In ~/.cursor/mcp.json (or .cursor/mcp.json in a project):',
      text: JSON.stringify({ mcpServers: { facecompute: { url: mcpUrl, headers: { Authorization: `Bearer ${key}` } } } }, null, 2),
    },
    {
      id: 'cfg-claude-desktop',
      title: 'Claude Desktop',
      where: 'In claude_desktop_config.json (Claude Desktop reaches remote servers through the mcp-remote bridge):',
      text: JSON.stringify({ mcpServers: { facecompute: { command: 'npx', args: ['-y', 'mcp-remote', mcpUrl, '--header', header] } } }, null, 2),
    },
    {
      id: 'cfg-vscode',
      title: 'VS Code',
      where: 'In .vscode/mcp.json:',
      text: JSON.stringify({ servers: { facecompute: { type: 'http', url: mcpUrl, headers: { Authorization: `Bearer ${key}` } } } }, null, 2),
    },
  ];
}

export function mcpPage(o: KeysPageOptions): Html {
  const key = o.created?.key ?? '<MCP_KEY>';
  return html`<h1>MCP</h1>
<p class="muted">MCP keys (<code>fc_mcp_…</code>) work on the MCP endpoint only: <code>${o.mcpUrl}</code>. Tools: get_capabilities (free), verify_faces, represent_face, compare_inputs, search_docs (free: searches these docs, whose pages are also MCP resources).</p>
${notice(o.notice)}
${o.agent ? agentGuide(o.kind, o.created !== undefined, o.agent) : ''}
${createdBox(o.created)}
${createForm(o)}
<section class="card" aria-labelledby="list-h"><h2 id="list-h">Your MCP keys</h2>${keyTable(o)}</section>
<section class="card" aria-labelledby="config-h">
<h2 id="config-h">Client configuration</h2>
<p class="muted">${o.created ? 'Your new key is filled in below.' : html`Replace <code>&lt;MCP_KEY&gt;</code> with your key.`}</p>
${mcpConfigs(o.mcpUrl, key).map(
  (c) => html`<h3>${c.title}</h3><p class="hint">${c.where}</p>
<div class="secret"><pre id="${c.id}" tabindex="0">${c.text}</pre><button type="button" data-copy="${c.id}" aria-label="Copy the ${c.title} configuration">Copy</button></div>
<p class="sr-only" id="${c.id}-status" aria-live="polite"></p>`,
)}
</section>`;
}

/** The page a verification link opens: whether it worked. */
export function verifyPage(n: Notice): Html {
  return html`<h1>Email verification</h1>
${notice(n)}
<p><a href="/account">Go to your account</a></p>`;
}
