/**
 * src/service/lifecycle/cleanup.ts: what a request takes is given back once, in the order taken,
 * however the request ends, by the one listener on the response's close.
 */
import t from 'tap';
import Fastify, { type FastifyRequest } from 'fastify';
import { Releases, onClose, requestCleanup } from '../src/service/lifecycle/cleanup.js';

t.test('releases run once, in order; a throwing or failing one does not stop the others', async (t) => {
  const r = new Releases();
  const ran: string[] = [];
  r.add(() => ran.push('slot'));
  r.add(() => {
    throw new Error('boom');
  });
  r.add(async () => {
    ran.push('budget');
    throw new Error('async boom');
  });
  r.add(() => ran.push('ticket'));
  r.runAll();
  r.runAll();
  t.same(ran, ['slot', 'budget', 'ticket'], 'each once, in the order added');
  r.add(() => ran.push('late'));
  t.same(ran, ['slot', 'budget', 'ticket', 'late'], 'one added after the close runs at once');
});

t.test('a surface with requestCleanup runs what its requests registered when each response closes', async (t) => {
  const app = Fastify();
  await app.register(requestCleanup);
  const ran: string[] = [];
  app.addHook('onRequest', async (req) => onClose(req, () => ran.push(`hook ${req.id}`)));
  app.get('/x', async (req) => {
    onClose(req, () => ran.push(`route ${req.id}`));
    return { ok: true };
  });
  t.teardown(() => app.close());
  const res = await app.inject({ method: 'GET', url: '/x' });
  t.equal(res.statusCode, 200);
  await new Promise((r) => setImmediate(r));
  t.same(ran.map((s) => s.split(' ')[0]), ['hook', 'route'], 'both, hook first');
  t.throws(() => onClose({ releases: undefined } as unknown as FastifyRequest, () => undefined), /not registered/, 'a surface without the plugin is told so');
});
