/**
 * Makes samples/: the three small photos the README's "Try it" block uses from a clone alone (two of
 * one person, one of another), from face_recognition's examples in ../shared/data (MIT licence, which
 * allows redistribution; samples/LICENSE carries it). Resized with sharp (0.35.x, mozjpeg, quality 82)
 * to 30-36 KB each. Run once offline: node tools/samples/make-samples.mjs [SHARED_DATA_DIR]
 *
 * The verify answers the README promises for them (same person: verified; other person: not, with
 * Facenet and Dlib, detector opencv) are asserted by test/registry-install.test.ts and
 * test/doc-examples.test.ts.
 */
import sharp from 'sharp';
import { chmodSync, copyFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const data = resolve(process.argv[2] ?? process.env.SHARED_DATA_DIR ?? join(root, '..', 'shared', 'data'), 'face-recognition-examples');
const out = join(root, 'samples');
const SAMPLES = [
  { from: 'examples/obama.jpg', to: 'img1.jpg', width: 400 },
  { from: 'examples/obama2.jpg', to: 'img2.jpg', width: 360 },
  { from: 'examples/biden.jpg', to: 'img3.jpg', width: 420 },
];
for (const s of SAMPLES) {
  const target = join(out, s.to);
  await sharp(join(data, s.from)).resize({ width: s.width }).jpeg({ quality: 82, mozjpeg: true }).toFile(target);
  process.stdout.write(`${s.to}: ${s.from}, ${statSync(target).size} bytes\n`);
}
copyFileSync(join(data, 'LICENSE.source'), join(out, 'LICENSE'));
chmodSync(join(out, 'LICENSE'), 0o644);
