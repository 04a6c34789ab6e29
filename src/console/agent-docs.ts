/**
 * What an agent reads to get going on its own: /llms.txt (an index, per llmstxt.org) and /skill.md
 * (the full procedure with curl examples). URLs and free-call totals are filled in from the
 * configuration and the console address the agent used. Every ```sh block runs as written against
 * a live service (test/doc-examples.test.ts runs them), so keep them runnable: images are read from
 * files (multipart, or base64 through pipes and --rawfile), never passed as command-line arguments.
 */
import type { FreeCallLimits } from '../accounts/index.js';
import { pageForAgents, type DocUrls } from '../docs-index/for-agents.js';

export type { DocUrls };

const IMAGES_NOTE = 'The examples read two photos of one person, `img1.jpg` and `img2.jpg`, from the current directory (JPEG, PNG, WebP, GIF or BMP).';

export function llmsTxt(u: DocUrls, calls: FreeCallLimits): string {
  return `# facecompute

> Face verification, embeddings and comparison over HTTP, with DeepFace's models and semantics. Agents can sign up anonymously (no email), create their own API key and get ${calls.anonymous} free calls.

REST gateway: ${u.base}
MCP endpoint (Streamable HTTP): ${u.mcp}
Console (accounts and keys): ${u.console}

## Docs

- [Skill: sign up, create a key, call the API](${u.console}/skill.md): step-by-step with curl, and what to do on each error
- [OpenAPI 3.1 document](${u.console}/openapi.json): every REST route, request and response ([rendered](${u.console}/docs/api))
- [Documentation](${u.console}/docs/): quickstart, API, errors, limits, thresholds, migrating from DeepFace
- [The whole documentation in one text](${u.console}/llms-full.txt)
- [Skills index](${u.console}/.well-known/skills/index.json): the skills this service publishes (Agent Skills discovery)
- [Sign up in a browser](${u.console}/signup?agent=1): one click for an agent driving a browser

## Quick start

${IMAGES_NOTE}

\`\`\`sh
# 1. an anonymous account (${calls.anonymous} free calls) and its session token
export SESSION_TOKEN=$(curl -s -X POST ${u.console}/api/signup/anonymous | jq -r .session_token)
# 2. a REST key, shown once: store it
export API_KEY=$(curl -s -X POST ${u.console}/api/keys -H "Authorization: Bearer $SESSION_TOKEN" \\
  -H 'content-type: application/json' -d '{"name":"my-agent"}' | jq -r .key)
# 3. what the service offers, then a verification
curl -s ${u.base}/capabilities
curl -s -X POST ${u.base}/verify -H "Authorization: Bearer $API_KEY" -F img1=@img1.jpg -F img2=@img2.jpg
\`\`\`

Many vectors: POST /compare as multipart with a \`targets\` file part of raw little-endian float32 (\`application/octet-stream\`, N × dims) and \`top_k\`; \`source\` may be a list for one result list per source ([details](${u.console}/skill.md)).

## Optional

- [MCP keys](${u.console}/skill.md#mcp): \`POST ${u.console}/api/mcp-keys\` for the MCP endpoint (REST and MCP keys are not interchangeable)
`;
}

export function skillMd(u: DocUrls, calls: FreeCallLimits): string {
  return `---
name: facecompute
description: Verify whether two face images show the same person, compute face embeddings, and compare an embedding against many, over the facecompute REST API (DeepFace-compatible). Includes anonymous self-signup for agents.
---

# facecompute

Face verification, embeddings and 1:N comparison with DeepFace's models, thresholds and result names.

- REST gateway: \`${u.base}\`
- MCP endpoint: \`${u.mcp}\`
- Console API (accounts and keys): \`${u.console}/api/\`
- OpenAPI: \`${u.console}/openapi.json\`

${IMAGES_NOTE} They need \`curl\` and \`jq\` (and \`python3\` for the binary /compare example).

## 1. Sign up anonymously (one call, no email)

\`\`\`sh
export SESSION_TOKEN=$(curl -s -X POST ${u.console}/api/signup/anonymous | jq -r .session_token)
\`\`\`

The answer is \`201 {"account":{"id":"…","tier":"anonymous","free_calls":{"total":${calls.anonymous},"used":0,"remaining":${calls.anonymous}},…},"session_token":"fc_sess_…"}\`.
The session token authenticates you to the console API only (\`Authorization: Bearer $SESSION_TOKEN\`).
Anonymous signups are limited per client address per hour (\`429 signup_rate_limited\`): sign up once and
keep the token.

## 2. Create your API key (shown once)

\`\`\`sh
export API_KEY=$(curl -s -X POST ${u.console}/api/keys -H "Authorization: Bearer $SESSION_TOKEN" \\
  -H 'content-type: application/json' -d '{"name":"my-agent"}' | jq -r .key)
\`\`\`

The answer is \`201 {"id":"…","name":"my-agent","prefix":"fc_live_AbCdEfGh","key":"fc_live_…","created_at":"…"}\`.
Store the key now: only its hash is kept and it cannot be shown again. (Without jq, read \`session_token\`
and \`key\` from the JSON answers.)

An anonymous account holds one REST key (a second is \`409 key_limit_reached\`) and one MCP key.
List keys with \`GET /api/keys\`; revoke with \`DELETE /api/keys/{id}\`.

## 3. Read the capabilities (free, no key)

\`\`\`sh
curl -s ${u.base}/capabilities
\`\`\`

Use \`allowed_models\`, \`default_model\`, \`allowed_detectors\` and \`limits\` from the answer; never hard-code them.

## 4. Verify two faces

Send the images as multipart file parts:

\`\`\`sh
curl -s -X POST ${u.base}/verify -H "Authorization: Bearer $API_KEY" -F img1=@img1.jpg -F img2=@img2.jpg
# {"verified":true,"distance":…,"threshold":0.4,"confidence":…,"model":"Facenet","detector_backend":"opencv","similarity_metric":"cosine","facial_areas":{…},"time":…}
\`\`\`

or in JSON, as base64 or \`data:\` URIs. An image's base64 is too long for a command-line argument, so
build the body from files (\`jq --rawfile\`) and send it from a file or stdin (\`-d @file\`, \`-d @-\`):

\`\`\`sh
base64 < img1.jpg | tr -d '\\n' > img1.b64
base64 < img2.jpg | tr -d '\\n' > img2.b64
jq -n --rawfile a img1.b64 --rawfile b img2.b64 '{img1: ("data:image/jpeg;base64," + $a), img2: ("data:image/jpeg;base64," + $b)}' |
  curl -s -X POST ${u.base}/verify -H "Authorization: Bearer $API_KEY" -H 'content-type: application/json' -d @-
\`\`\`

## 5. Represent (embeddings)

\`\`\`sh
curl -s -X POST ${u.base}/represent -H "Authorization: Bearer $API_KEY" -F img=@img1.jpg -F img=@img2.jpg > faces.json
jq -c '{model, images: (.results | length), dims: (.results[0][0].embedding | length)}' faces.json
# {"model":"Facenet","images":2,"dims":128}
\`\`\`

One \`img\` answers \`{"results":[{"embedding":[…],"facial_area":{…},"face_confidence":…}],"model":…}\`;
several (a batch) answer one list of faces per image, as here.

## 6. Compare one face or embedding against many embeddings

\`\`\`sh
jq '{source: {embedding: .results[0][0].embedding}, targets: [.results[][0].embedding], top_k: 5}' faces.json |
  curl -s -X POST ${u.base}/compare -H "Authorization: Bearer $API_KEY" -H 'content-type: application/json' -d @-
# {"model":"Facenet","similarity_metric":"cosine","threshold":…,"dims":128,"source":null,"results":[{"index":0,"distance":0,"verified":true,"confidence":…},…],"time":…}
\`\`\`

\`source\` may also be \`{"img": …}\` (an image, as in /verify).

Many vectors: send them as raw little-endian float32 (row-major, N × dims, dims from
\`embedding_dims\` in /capabilities) in a multipart file part named \`targets\` with content type
\`application/octet-stream\`. It is read in place, with no parsing, and is the fastest way by far
(\`targets_b64\`, the same bytes in base64, is the JSON alternative). Here the two embeddings of
\`faces.json\` become such a file, and the first is the source, as a JSON text part read from a file:

\`\`\`sh
python3 -c 'import json, struct, sys; rows = [faces[0]["embedding"] for faces in json.load(open("faces.json"))["results"]]; sys.stdout.buffer.write(b"".join(struct.pack("<%df" % len(r), *r) for r in rows))' > targets.f32
jq -c '{embedding: .results[0][0].embedding}' faces.json > source.json
curl -s -X POST ${u.base}/compare -H "Authorization: Bearer $API_KEY" \\
  -F 'source=<source.json' -F top_k=10 -F 'targets=@targets.f32;type=application/octet-stream'
\`\`\`

Fastest: put \`source\` (1 to 3 embeddings), \`model_name\` and \`distance_metric\` before the \`targets\` part
(add \`-F model_name=Facenet -F distance_metric=cosine\` before \`-F 'targets=@…'\`): the rows are then
compared while they arrive, and the answer comes as soon as the last byte does. In any other order the
answer is the same, computed after the body.

Many faces at once: \`source\` may be a list (\`[{"embedding":[…]},{"img":"…"}]\`, at most
\`limits.max_sources\`); \`results\` then holds one list per source and \`source\` one entry per
source. Use \`top_k\` (10 to 100 is typical): without it every target gets a result, and
sources × results may not exceed \`limits.max_compare_results\`.

Errors: a binary part that is not a whole number of rows is \`400 embedding_dimension_mismatch\`
(the detail gives the row count and the byte lengths that would fit); NaN or Infinity is
\`400 invalid_embedding\` naming the row; more targets, sources or results than the limits is
\`413 too_many_targets\` with the limit in the detail.

## Free calls

A call is used only when compute ran: a result of /verify, /represent, /compare or an MCP tool other
than get_capabilities and search_docs, or a 422 no_face_detected. Everything refused before compute (4xx), capacity
refusals (503) and failures on our side (5xx) cost nothing. Check what is left:

\`\`\`sh
curl -s ${u.console}/api/account -H "Authorization: Bearer $SESSION_TOKEN"
\`\`\`

Anonymous: ${calls.anonymous}. With a verified email and a password: ${calls.account} in total (\`POST /api/account/upgrade\` with
\`{"email","password"}\`, then follow the link mailed to that address; keys and usage are kept). With a saved card: ${calls.card} in total
(\`POST /api/account/card\` with \`{"payment_method":"pm_…"}\`, a payment-provider token, never a card number).

## Errors and what to do

Every error is \`{"error":"<code>","detail":"…"}\`. The most common ones are below; every code, with
whether to retry: ${u.console}/docs/errors.md.

| Code | Status | Do this |
|---|---|---|
| \`missing_api_key\` | 401 | Send \`Authorization: Bearer $API_KEY\`. No key yet? Do steps 1 and 2. |
| \`invalid_api_key\` | 401 | The key is unknown, revoked, or of the other kind (REST \`fc_live_…\` on the gateway, MCP \`fc_mcp_…\` on MCP). Create a new key. |
| \`insufficient_credits\` | 402 | The free calls are used up. Stop retrying; upgrade the account (email: ${calls.account}, card: ${calls.card}) or ask your operator. |
| \`rate_limited\` | 429 | Too many requests. Wait \`Retry-After\` seconds (see also the \`RateLimit-*\` headers), then retry. |
| \`queue_full\` / \`queue_timeout\` | 503 | The service is busy. Wait \`Retry-After\` seconds and retry with backoff; lower your concurrency. |
| \`service_warming\` | 503 | Models are loading. Wait \`Retry-After\` seconds. |
| \`no_face_detected\` | 422 | No face found (this call counts). Send a clearer, larger, frontal photo. Do not retry /verify with \`enforce_detection: false\`: it then compares the whole images and the answer says nothing about identity. |
| \`signup_rate_limited\` | 429 | Too many anonymous signups from your address. Reuse your existing account and key. |

## MCP

Create an MCP key (MCP keys work only on the MCP endpoint):

\`\`\`sh
curl -s -X POST ${u.console}/api/mcp-keys -H "Authorization: Bearer $SESSION_TOKEN" \\
  -H 'content-type: application/json' -d '{"name":"my-agent-mcp"}'
\`\`\`

Then connect your MCP client to \`${u.mcp}\` with the header \`Authorization: Bearer <MCP_KEY>\`.
Tools: \`get_capabilities\` (free), \`verify_faces\`, \`represent_face\`, \`compare_inputs\`, and \`search_docs\`
(free: ranked passages of this service's documentation; every page is also an MCP resource).
`;
}

export interface AgentDocPage {
  name: string;
  title: string;
  markdown: string;
}

/**
 * /llms-full.txt (llmstxt.org's companion to /llms.txt): every page of the documentation in one text,
 * in the order the docs' index lists them, each introduced by its title and its URL.
 */
export function llmsFullTxt(u: DocUrls, calls: FreeCallLimits, pages: AgentDocPage[]): string {
  const head = `# facecompute: the complete documentation

> Face verification, embeddings and comparison over HTTP, with DeepFace's models and semantics. Agents can sign up anonymously (no email), create their own API key and get ${calls.anonymous} free calls. This file holds every page of the documentation (${u.console}/docs/) in one text; the short index is ${u.console}/llms.txt and the step-by-step skill ${u.console}/skill.md.

REST gateway: ${u.base}
MCP endpoint (Streamable HTTP): ${u.mcp}
Console (accounts and keys): ${u.console}

Pages: ${pages.map((p) => p.title).join(' · ')}
`;
  const body = pages.map((p) => `\n---\n\n<!-- ${p.title}: ${p.name === 'README.md' ? `${u.console}/docs/` : `${u.console}/docs/${p.name}`} -->\n\n${pageForAgents(p.markdown, u).trim()}\n`);
  return head + body.join('');
}

/** One skill of the discovery index (src/console/routes/skills.ts). */
export interface Skill {
  name: string;
  description: string;
  document: string;
}

/** The skills this deployment publishes; each document's frontmatter names it and describes it. */
export function skills(u: DocUrls, calls: FreeCallLimits): Skill[] {
  return [skillMd(u, calls)].map((document) => {
    const front = /^---\n([\s\S]*?)\n---\n/.exec(document)?.[1] ?? '';
    const field = (k: string) => new RegExp(`^${k}: (.*)$`, 'm').exec(front)?.[1]?.trim() ?? '';
    return { name: field('name'), description: field('description'), document };
  });
}
