/**
 * Agent Skills discovery (the Agent Skills Discovery RFC, github.com/cloudflare/agent-skills-discovery-rfc,
 * adopted by agentskills.io as its well-known URI): the skills this deployment publishes, each a
 * SKILL.md (YAML frontmatter with name and description, then instructions).
 *
 * - v0.1.0 layout, /.well-known/skills/: `index.json` ({"skills":[{name, description, files}]}, the
 *   files relative to the skill's directory), each skill at `<name>/SKILL.md`. `/.well-known/skills`
 *   itself answers the index, and `/.well-known/skills/<name>` the skill's document. Each entry also
 *   carries `url`, the document's absolute address (clients ignore fields they do not know).
 * - v0.2.0 layout, /.well-known/agent-skills/: `index.json` with `$schema` and, per skill, `type`
 *   "skill-md", `url` and `digest` (sha256 of the exact bytes served at `url`).
 *
 * /skill.md stays: it is the same document as the `facecompute` skill. An unknown skill is
 * 404 not_found in the console's error shape.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { ServiceError } from '../../errors/index.js';
import { skills, type DocUrls, type Skill } from '../agent-docs.js';
import type { FreeCallLimits } from '../../accounts/index.js';

export interface SkillsOptions {
  freeCalls: FreeCallLimits;
  urls: (req: FastifyRequest) => DocUrls;
}

/** The v0.2.0 index's schema URI (an opaque identifier clients match). */
export const DISCOVERY_SCHEMA = 'https://schemas.agentskills.io/discovery/0.2.0/schema.json';

const MARKDOWN = 'text/markdown; charset=utf-8';

export default async function skillsRoutes(app: FastifyInstance, opts: SkillsOptions): Promise<void> {
  const all = (req: FastifyRequest) => skills(opts.urls(req), opts.freeCalls);
  const one = (req: FastifyRequest): Skill => {
    const name = (req.params as { name: string }).name;
    const skill = all(req).find((s) => s.name === name);
    if (!skill) throw new ServiceError('not_found', `no skill named ${JSON.stringify(name.slice(0, 64))}; the index is /.well-known/skills/index.json`);
    return skill;
  };

  const indexV1 = async (req: FastifyRequest, reply: FastifyReply) => {
    const console = opts.urls(req).console;
    return reply.type('application/json; charset=utf-8').send({
      skills: all(req).map((s) => ({ name: s.name, description: s.description, files: ['SKILL.md'], url: `${console}/.well-known/skills/${s.name}/SKILL.md` })),
    });
  };
  app.get('/.well-known/skills', indexV1);
  app.get('/.well-known/skills/', indexV1);
  app.get('/.well-known/skills/index.json', indexV1);
  const document = async (req: FastifyRequest, reply: FastifyReply) => reply.type(MARKDOWN).send(one(req).document);
  app.get('/.well-known/skills/:name', document);
  app.get('/.well-known/skills/:name/SKILL.md', document);

  app.get('/.well-known/agent-skills/index.json', async (req, reply) => {
    const console = opts.urls(req).console;
    return reply.type('application/json; charset=utf-8').send({
      $schema: DISCOVERY_SCHEMA,
      skills: all(req).map((s) => ({
        name: s.name,
        type: 'skill-md',
        description: s.description,
        url: `${console}/.well-known/agent-skills/${s.name}/SKILL.md`,
        digest: `sha256:${createHash('sha256').update(s.document, 'utf8').digest('hex')}`,
      })),
    });
  });
  app.get('/.well-known/agent-skills/:name/SKILL.md', document);
}
