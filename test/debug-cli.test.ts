/**
 * `facecompute debug haar-windows`: the opencv detector's raw windows before grouping, as a user
 * runs it from the command line, against opencv-python's own windows in the fixture
 * (tools/reference/opencv_haar.py), and its --against comparison with such an answer.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT, SHARED_DATA_DIR, SHARED_WEIGHTS_DIR } from './helpers/shared.js';

interface Entry {
  path: string;
  faces: [number, number, number, number, number, number, [number, number] | null, [number, number] | null][];
  windows?: [number, number, number, number, number][];
}
const fixture = JSON.parse(readFileSync(resolve(REPO_ROOT, 'test/fixtures/opencv_haar.json'), 'utf8')) as { images: Entry[] };
const bmp = fixture.images.find((i) => i.path.endsWith('.bmp') && i.windows)!;

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) => {
    execFile(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'debug', ...args], { env: { ...process.env, FACECOMPUTE_WEIGHTS_DIR: SHARED_WEIGHTS_DIR }, cwd: REPO_ROOT }, (err, stdout, stderr) =>
      res({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const image = resolve(SHARED_DATA_DIR, bmp.path);

t.test("prints the faces and OpenCV's raw windows, in OpenCV's order", async (t) => {
  const r = await cli('haar-windows', image);
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { align: boolean; width: number; height: number; faces: Array<Record<string, unknown>>; windows: Array<{ x: number; y: number; w: number; h: number; weight: number; group: number }> };
  t.equal(out.align, true);
  t.same(
    out.faces.map((f) => [f['x'], f['y'], f['w'], f['h'], f['reject_level'], f['level_weight'], f['left_eye'], f['right_eye']]),
    bmp.faces,
    "the faces are OpenCV's, with its reject level and level weight",
  );
  // The windows inside the image are exactly what OpenCV returns with minNeighbors=0.
  const inside = out.windows.every((w) => w.x >= 0 && w.y >= 0 && w.x + w.w <= out.width && w.y + w.h <= out.height);
  t.ok(inside, 'no window crosses the bordered image here');
  t.same(out.windows.map((w) => [w.x, w.y, w.w, w.h, w.weight]), bmp.windows);
  t.ok(out.windows.every((w) => Number.isInteger(w.group)), 'each window names its group');
});

t.test('--against an OpenCV answer: the windows only one side has, and the exit code', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-haar-'));
  const asOpencv = (windows: [number, number, number, number, number][]) => ({
    faces: [],
    windows: windows.map(([x, y, w, h, weight]) => ({ x, y, w, h, weight })),
  });
  const same = join(dir, 'same.json');
  writeFileSync(same, JSON.stringify(asOpencv(bmp.windows!)));
  const r = await cli('haar-windows', image, '--against', same);
  t.equal(r.code, 0, r.stderr);
  const d = JSON.parse(r.stdout);
  t.same([d.only_ours, d.only_opencv, d.windows.same_order], [[], [], true]);

  // One window missing on OpenCV's side and one extra there: both are named, and the exit code is 1.
  const changed = bmp.windows!.slice(1);
  changed.push([1, 2, 24, 24, 0.5]);
  const other = join(dir, 'other.json');
  writeFileSync(other, JSON.stringify(asOpencv(changed)));
  const r2 = await cli('haar-windows', image, '--against', other);
  t.equal(r2.code, 1);
  const d2 = JSON.parse(r2.stdout);
  const [x, y, w, h, weight] = bmp.windows![0]!;
  t.match(d2.only_ours, [{ x, y, w, h, weight }]);
  t.same(d2.only_opencv, [{ x: 1, y: 2, w: 24, h: 24, weight: 0.5 }]);
  t.equal(d2.windows.same_order, false);
});

t.test('--no-align scans the image as it is; usage errors exit 2', async (t) => {
  const r = await cli('haar-windows', image, '--no-align');
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.equal(out.align, false);
  t.ok(out.width < JSON.parse((await cli('haar-windows', image)).stdout).width, 'no border');
  for (const args of [[], ['haar-windows'], ['haar-windows', image, '--bogus'], ['haar-windows', image, '--against'], ['nope']]) {
    const u = await cli(...args);
    t.equal(u.code, 2, `usage: ${args.join(' ')}`);
    t.match(u.stderr, /usage: facecompute debug haar-windows/);
  }
  const missing = await cli('haar-windows', join(SHARED_DATA_DIR, 'no-such-image.jpg'));
  t.equal(missing.code, 1, 'an unreadable image fails');
});
