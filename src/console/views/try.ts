/**
 * The "Try it" page: the form and the empty answer that /assets/try-it.js fills in.
 * Every control has a label; the answer's parts carry ids the script and the browser test address.
 */
import { html, type Html } from './html.js';

export interface TryPageOptions {
  csrf: string;
  /** The gateway's public URL (FACECOMPUTE_PUBLIC_BASE_URL): where the browser sends the calls. */
  gatewayUrl: string;
}

function figure(i: 1 | 2): Html {
  return html`<figure class="try-figure">
<div class="try-stage"><img id="try-view${i}" alt="Photo ${i} with its faces boxed"><div class="try-boxes" id="try-boxes${i}" aria-hidden="true"></div></div>
<figcaption><span id="try-name${i}"></span> · <span id="try-count${i}"></span></figcaption>
</figure>`;
}

export function tryPage(o: TryPageOptions): Html {
  return html`<h1>Try it</h1>
<p class="muted">Verify two photos with a REST key of this account. Your browser sends them straight to <code>${o.gatewayUrl}</code>, as any client would: each run spends the account's calls (one for <code>/verify</code>, and one more for <code>/represent</code> when every face is boxed and <code>/verify</code> answered).</p>
<form id="try-form" class="card" data-gateway="${o.gatewayUrl}" data-csrf="${o.csrf}" novalidate>
<h2 id="try-key-h">Key</h2>
<label for="try-key">REST key of this account</label>
<input id="try-key" type="password" autocomplete="off" spellcheck="false" aria-describedby="try-key-hint">
<p class="hint" id="try-key-hint">Kept in this browser tab only (session storage) and sent only to the API, in the Authorization header. The console stores keys hashed, so it cannot fill in one you made earlier.</p>
<div class="actions"><button type="button" class="secondary" id="try-new-key">Create a key for this page</button></div>
<fieldset class="try-source">
<legend>Photos</legend>
<label class="inline"><input type="radio" name="source" value="same" checked> Sample pair: the same person (img1.jpg, img2.jpg)</label>
<label class="inline"><input type="radio" name="source" value="different"> Sample pair: two people (img1.jpg, img3.jpg)</label>
<label class="inline"><input type="radio" name="source" value="upload"> My own photos</label>
<div id="try-uploads" hidden>
<label for="try-img1">First photo</label>
<input id="try-img1" type="file" accept="image/jpeg,image/png,image/webp,image/gif,image/bmp">
<label for="try-img2">Second photo</label>
<input id="try-img2" type="file" accept="image/jpeg,image/png,image/webp,image/gif,image/bmp">
</div>
</fieldset>
<div class="try-options">
<div><label for="try-model">Model</label><select id="try-model"></select></div>
<div><label for="try-detector">Detector</label><select id="try-detector"></select></div>
</div>
<label class="inline"><input type="checkbox" id="try-all-faces" checked> Box every face found (one more call: <code>/represent</code>)</label>
<div class="actions"><button type="submit" id="try-run" disabled>Verify</button></div>
<p id="try-status" class="try-status" role="status" aria-live="polite"></p>
</form>
<section id="try-result" class="card" aria-labelledby="try-result-h" hidden>
<h2 id="try-result-h">Answer</h2>
<p id="try-verdict" class="verdict"></p>
<div id="try-answer">
<div class="try-pair">${figure(1)}${figure(2)}</div>
<p class="legend"><span class="swatch try-used"></span>face used for the decision <span class="swatch try-other"></span>other faces found <span class="swatch try-eye"></span>eyes</p>
<h3>Distance and thresholds</h3>
<div class="try-scale" id="try-scale-track" aria-hidden="true"></div>
<dl class="facts try-marks" id="try-scale-legend"></dl>
<p class="hint" id="try-scale-note"></p>
</div>
<p id="try-remaining" data-testid="try-remaining"></p>
<p class="hint">Request ids: <span id="try-request-ids"></span> (they appear on the <a href="/usage">Usage</a> page).</p>
<h3>The same call with curl</h3>
<div class="secret"><pre id="try-curl"></pre><button type="button" class="secondary" data-copy="try-curl">Copy</button></div>
<span id="try-curl-status" class="sr-only" role="status"></span>
<h3>Raw JSON</h3>
<pre id="try-json"></pre>
<details><summary>/represent's answer (every face)</summary><pre id="try-represent-json"></pre></details>
</section>`;
}
