/**
 * test/helpers/ports.ts: a port handed to one test process is not handed to another while the first
 * lives (a full run saw two processes' stretches meet, and a child's bind fail with EADDRINUSE).
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLAIMS, claim, freePort } from './helpers/ports.js';

t.test('a claim held by a live process is refused; one left by a dead process is taken over', async (t) => {
  // Ports above 65535 are never handed out by freePort, so these claims meet no test beside this one.
  const live = 70_001;
  const dead = 70_002;
  t.teardown(() => [live, dead].forEach((p) => rmSync(join(CLAIMS, String(p)), { force: true })));
  t.ok(claim(live), 'a free port is claimed');
  t.notOk(claim(live), 'and not handed out twice by this process');
  writeFileSync(join(CLAIMS, String(live)), String(process.ppid));
  t.notOk(claim(live), 'nor claimed while another live process holds it');
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
  writeFileSync(join(CLAIMS, String(dead)), gone);
  t.ok(claim(dead), `a claim left by a process that is gone (pid ${gone}) is taken over`);
  t.equal(readFileSync(join(CLAIMS, String(dead)), 'utf8'), String(process.pid));
});

t.test('freePort hands out distinct, claimed ports', async (t) => {
  const ports = [await freePort(), await freePort(), await freePort()];
  t.equal(new Set(ports).size, 3);
  for (const p of ports) t.equal(readFileSync(join(CLAIMS, String(p)), 'utf8'), String(process.pid), `${p} is claimed by this process`);
});
