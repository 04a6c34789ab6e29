/**
 * The console for an AI agent driving a browser (/signup?agent=1, then /keys?agent=1 and /mcp?agent=1):
 * one button makes an anonymous account and its REST key, and every page says, in the imperative,
 * what to click, where the key is (the element `#new-key`) and what to do next. Elements an agent
 * acts on have stable ids and data-testid attributes. No script beyond the console's own.
 */
import { html, type Html } from './html.js';
import type { FreeCallLimits } from '../../accounts/index.js';

export interface AgentUrls {
  console: string;
  base: string;
  mcp: string;
}

/** The key made by the one-click signup, on the REST key page. */
export const AGENT_KEY_NAME = 'agent';

const csrfField = (csrf: string) => html`<input type="hidden" name="_csrf" value="${csrf}">`;

export function agentSignupPage(csrf: string, limits: FreeCallLimits, u: AgentUrls, notice: Html | '' = ''): Html {
  return html`<div class="narrow agent">
<h1>Sign up as an AI agent</h1>
${notice}
<section class="card" aria-labelledby="agent-steps-h" data-testid="agent-instructions">
<h2 id="agent-steps-h">Instructions for the agent</h2>
<ol class="steps">
<li>Click the button <strong>Create an anonymous account and API key</strong> below. No email, no password, no captcha: the account is anonymous and has ${limits.anonymous} free calls.</li>
<li>The next page shows your API key once, in the element with id <code>new-key</code> (it starts with <code>fc_live_</code>). Copy it there and store it: it is never shown again.</li>
<li>Call the REST API with the header <code>Authorization: Bearer &lt;your key&gt;</code>, e.g. <code>POST ${u.base}/verify</code> with two images (<code>img1</code>, <code>img2</code>). <code>GET ${u.base}/capabilities</code> is free and needs no key.</li>
<li>For MCP, the next page links to the MCP key page; the MCP endpoint is <code>${u.mcp}</code>.</li>
</ol>
<form method="post" action="/signup/anonymous">${csrfField(csrf)}<input type="hidden" name="agent" value="1">
<div class="actions"><button type="submit" id="agent-signup" data-testid="agent-signup">Create an anonymous account and API key</button></div>
</form>
</section>
<section class="card" aria-labelledby="agent-http-h">
<h2 id="agent-http-h">Without a browser</h2>
<p class="muted">The same in two HTTP calls: <code>POST ${u.console}/api/signup/anonymous</code> answers a session token, then <code>POST ${u.console}/api/keys</code> with it answers a key. The step-by-step with curl is <a href="/skill.md">/skill.md</a>; the index for agents is <a href="/llms.txt">/llms.txt</a>, the whole documentation <a href="/llms-full.txt">/llms-full.txt</a>.</p>
</section>
</div>`;
}

/** What the agent does next, on its key pages: where the key is, and the next page. */
export function agentGuide(kind: 'rest' | 'mcp', hasNewKey: boolean, u: AgentUrls): Html {
  const steps =
    kind === 'rest'
      ? html`<li>${hasNewKey ? html`Your API key is the text of the element with id <code>new-key</code> (it starts with <code>fc_live_</code>). Copy it now and store it: it is shown only once.` : html`Type a name in the <strong>Name</strong> field (id <code>key-name</code>) and click <strong>Create API key</strong>; the key then appears in the element with id <code>new-key</code>, once.`}</li>
<li>Send it as <code>Authorization: Bearer &lt;key&gt;</code> to the REST gateway at <code>${u.base}</code> (<code>/verify</code>, <code>/represent</code>, <code>/compare</code>).</li>
<li>For MCP, open <a href="/mcp?agent=1" id="agent-next" data-testid="agent-next">the MCP key page</a>: REST keys do not work on MCP.</li>`
      : html`<li>${hasNewKey ? html`Your MCP key is the text of the element with id <code>new-key</code> (it starts with <code>fc_mcp_</code>). Copy it now and store it: it is shown only once.` : html`Type a name in the <strong>Name</strong> field (id <code>key-name</code>) and click <strong>Create MCP key</strong>; the key then appears in the element with id <code>new-key</code>, once.`}</li>
<li>Connect to <code>${u.mcp}</code> (Streamable HTTP) with the header <code>Authorization: Bearer &lt;MCP key&gt;</code>; the configurations below have it filled in once it is created.</li>
<li>Call <code>get_capabilities</code> first (free); <code>search_docs</code> (free) answers questions about this service.</li>`;
  return html`<section class="card agent" aria-labelledby="agent-guide-h" data-testid="agent-instructions">
<h2 id="agent-guide-h">Instructions for the agent</h2>
<ol class="steps">${steps}</ol>
</section>`;
}
