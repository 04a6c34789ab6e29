/**
 * The "Try it" page (GET /try), its script (GET /assets/try-it.js) and the shipped sample photos
 * (GET /samples/<name>).
 *
 * How the page calls the API, and why. Keys are stored hashed, so the console cannot use a key the
 * account made earlier. Three ways were weighed:
 * - the console computes server-side on the account's behalf: the console would then need a path to
 *   the compute that bypasses keys (a new internal credential between separate pods), a body limit
 *   raised from 64 KiB to the gateway's, and its own copy of admission and charging; a second way in
 *   is what a security reviewer asks to remove;
 * - the console keeps a "try-it" key's plaintext for the account: a stored secret, the one thing the
 *   hashed-key design exists to avoid;
 * - the browser calls the gateway itself with a key the person holds (chosen). The page takes a REST
 *   key pasted in, or makes one named "try-it" through the console's own CSRF-checked JSON API
 *   (POST /api/keys, as the API keys page does) and hands its plaintext only to this tab's
 *   sessionStorage. The key travels in the Authorization header to the gateway and nowhere else: never
 *   in a URL, never through the console (nothing to log), and the gateway's logger redacts the Authorization header (src/logging/logger.ts).
 *   Calls are charged and rate-limited exactly as any client's, since they are any client's calls.
 *   Bearer headers are never attached by a browser on its own, so a cross-site page cannot make these
 *   calls (no CSRF), and the gateway answers CORS for the console's origin only, without credentials
 *   (src/gateway/cors.ts).
 * It works alike under `facecompute serve` (one process, two ports: two origins) and the chart's pods:
 * the page learns the gateway's address from FACECOMPUTE_PUBLIC_BASE_URL, as the docs pages do, and
 * the page's CSP lets it connect there and nowhere else.
 */
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { PACKAGE_ROOT } from '../../package-root.js';
import { ServiceError } from '../../errors/index.js';
import { layout, pageCsp } from '../views/layout.js';
import { html } from '../views/html.js';
import { tryPage } from '../views/try.js';

export interface TryOptions {
  publicBaseUrl: string;
}

/**
 * The browser script: a plain file under assets/ beside package.json, read once at start-up (the
 * bundle does not carry it, and the container image ships no sources; scripts/container/build-app.sh
 * copies assets/ and samples/).
 */
export const TRY_SCRIPT_PATH = join(PACKAGE_ROOT, 'assets', 'console', 'try-it.js');
/** The photos of samples/ (README.md there gives their origin and licence). */
const SAMPLES_DIR = join(PACKAGE_ROOT, 'samples');
const SAMPLES = ['img1.jpg', 'img2.jpg', 'img3.jpg'] as const;

export default async function tryRoutes(app: FastifyInstance, opts: TryOptions): Promise<void> {
  const script = readFileSync(TRY_SCRIPT_PATH);
  const samples = new Map(SAMPLES.map((name) => [name, readFileSync(join(SAMPLES_DIR, name))]));
  const gatewayUrl = opts.publicBaseUrl.replace(/\/+$/, '');
  const gatewayOrigin = new URL(gatewayUrl).origin;

  app.get('/try', async (req, reply) => {
    const id = await app.optionalAccount(req);
    if (id === null) return reply.redirect('/signin', 303);
    const nonce = randomBytes(16).toString('base64');
    const csrf = app.csrfToken(req, reply);
    return reply
      .header('content-security-policy', pageCsp(nonce, { fetches: true, connectTo: [gatewayOrigin] }))
      .type('text/html; charset=utf-8')
      .send(
        layout({
          title: 'Try it',
          nonce,
          csrf,
          current: '/try',
          signedIn: true,
          body: tryPage({ csrf, gatewayUrl }),
          scripts: html`<script src="/assets/try-it.js" nonce="${nonce}"></script>`,
        }).value,
      );
  });

  app.get('/assets/try-it.js', async (_req, reply) => reply.type('text/javascript; charset=utf-8').send(script));

  app.get<{ Params: { name: string } }>('/samples/:name', async (req, reply) => {
    const bytes = samples.get(req.params.name as (typeof SAMPLES)[number]);
    if (!bytes) throw new ServiceError('not_found', 'no such sample photo');
    return reply.type('image/jpeg').send(bytes);
  });
}
