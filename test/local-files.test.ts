/**
 * `file:` inputs (FACECOMPUTE_LOCAL_IMAGES_ROOT; issue 24, low): one answer for every path that is
 * not served, so existence outside the root cannot be probed; no symbolic link is followed, on the
 * last component or any before it; a FIFO does not hold the thread pool; at most the byte limit is
 * read.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ImageResolver } from '../src/service/inputs/resolve.js';
import { ServiceError } from '../src/errors/index.js';
import { makePng } from './helpers/images.js';

const base = mkdtempSync(join(tmpdir(), 'fc-local-'));
const root = join(base, 'root');
const outside = join(base, 'outside');
mkdirSync(join(root, 'sub'), { recursive: true });
mkdirSync(outside);
const PNG = makePng(8, 8);
writeFileSync(join(root, 'a.png'), PNG);
writeFileSync(join(root, 'sub', 'b.png'), PNG);
writeFileSync(join(outside, 'secret.png'), PNG);
writeFileSync(join(root, 'big.png'), Buffer.concat([PNG, Buffer.alloc(5000)]));
symlinkSync(join(root, 'a.png'), join(root, 'link-inside.png'));
symlinkSync(join(outside, 'secret.png'), join(root, 'link-outside.png'));
symlinkSync(join(root, 'sub'), join(root, 'sublink'));
symlinkSync(outside, join(root, 'outlink'));
execFileSync('mkfifo', [join(root, 'fifo.png')]);
t.teardown(() => rmSync(base, { recursive: true, force: true }));

const resolver = new ImageResolver({ remoteImages: 'off', localImagesRoot: root, maxImageBytes: PNG.length + 1000, maxImagePixels: 1e6 }, null);
const ctx = { authenticated: true };

async function refusal(value: string): Promise<{ code: string; detail: string }> {
  try {
    await resolver.resolve(value, 'img', ctx);
  } catch (err) {
    if (err instanceof ServiceError) return { code: err.code, detail: err.detail };
    throw err;
  }
  return { code: 'served', detail: '' };
}

t.test('files inside the root are served', async (t) => {
  t.same(await resolver.resolve('file:a.png', 'img', ctx), PNG);
  t.same(await resolver.resolve('file:sub/b.png', 'img', ctx), PNG);
  t.same(await resolver.resolve(`file:${root}/sub/./b.png`, 'img', ctx), PNG, 'an absolute path inside the root');
  t.same(await resolver.resolve(`file://${root}/a.png`, 'img', ctx), PNG, 'a file:// URL');
});

t.test('every path that is not served gets the same answer', async (t) => {
  const paths: Array<[string, string]> = [
    ['file:missing.png', 'missing inside the root'],
    [`file:${outside}/secret.png`, 'existing outside the root'],
    [`file:${outside}/missing.png`, 'missing outside the root'],
    ['file:../outside/secret.png', 'up and out'],
    ['file:sub/../a.png', 'up and back in'],
    ['file:link-inside.png', 'a symbolic link to a file inside the root'],
    ['file:link-outside.png', 'a symbolic link to a file outside'],
    ['file:sublink/b.png', 'a symbolic link to a directory inside, on the way'],
    ['file:outlink/secret.png', 'a symbolic link to a directory outside, on the way'],
    ['file:sub', 'a directory'],
    ['file:fifo.png', 'a FIFO (opened without blocking)'],
    ['file:/etc/passwd', 'an absolute path elsewhere'],
  ];
  const first = await refusal(paths[0]![0]);
  t.equal(first.code, 'url_not_allowed');
  for (const [value, label] of paths) t.same(await refusal(value), first, label);
});

t.test('at most the byte limit is read', async (t) => {
  const r = await refusal('file:big.png');
  t.equal(r.code, 'image_too_large');
});
