/**
 * `facecompute debug <what>`: views into the pipeline for diagnosing a difference from DeepFace.
 *
 *   haar-windows <image> [--no-align]
 *       The `opencv` detector on one image as the service runs it (DeepFace's align border unless
 *       --no-align): the faces, and every window of the face cascade that passed all stages,
 *       before OpenCV's groupRectangles, with the group it joined. A face is the rounded mean of
 *       its group, so a box a pixel off OpenCV's is explained by the windows that differ.
 *       `tools/reference/opencv_haar.py --image <image>` prints OpenCV's answer in the same shape;
 *       with --against <that file> the answer is instead the difference: the windows only one side
 *       has (OpenCV's are clipped to the image, so ours are compared clipped) and both sides' faces.
 */
import { readFile } from 'node:fs/promises';
import { loadConfig } from '../config/index.js';
import { OpenCvDetector } from '../native/detect.js';
import { decodeImage, deepfaceBorder } from '../native/image.js';
import { artifactStatus, describeProblems } from '../models/catalog.js';

const USAGE = `usage: facecompute debug haar-windows <image> [--no-align] [--against <opencv.json>]
`;

interface Window {
  x: number;
  y: number;
  w: number;
  h: number;
  weight: number;
  group?: number;
}

/** OpenCV's clipObjects: the window within the image (what minNeighbors=0 returns). */
function clipped(w: Window, width: number, height: number): Window {
  const x0 = Math.max(0, w.x);
  const y0 = Math.max(0, w.y);
  const x1 = Math.min(width, w.x + w.w);
  const y1 = Math.min(height, w.y + w.h);
  return { ...w, x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

/** Ours against OpenCV's (opencv_haar.py --image): windows only one side has, and both sides' faces. */
export function compareWindows(ours: { width: number; height: number; windows: Window[]; faces: unknown[] }, theirs: { windows: Window[]; faces: unknown[] }): Record<string, unknown> {
  const key = (w: Window) => `${w.x},${w.y},${w.w},${w.h},${w.weight}`;
  const mine = ours.windows.map((w) => clipped(w, ours.width, ours.height));
  const theirKeys = new Set(theirs.windows.map(key));
  const myKeys = new Set(mine.map(key));
  return {
    windows: { ours: mine.length, opencv: theirs.windows.length, same_order: mine.length === theirs.windows.length && mine.every((w, i) => key(w) === key(theirs.windows[i]!)) },
    only_ours: mine.filter((w) => !theirKeys.has(key(w))),
    only_opencv: theirs.windows.filter((w) => !myKeys.has(key(w))),
    faces_ours: ours.faces,
    faces_opencv: theirs.faces,
  };
}

/** OpenCV's answer for one image, in the JSON shape opencv_haar.py --image prints. */
export async function haarWindows(path: string, align: boolean): Promise<Record<string, unknown>> {
  const cfg = loadConfig();
  const status = await artifactStatus('opencv', { weightsDir: cfg.models.weightsDir, cacheDir: cfg.models.cacheDir });
  if (!status.installed) throw new Error(`the opencv cascades are not installed: ${describeProblems(status.problems)}`);
  const [face, eye] = await Promise.all(status.weightPaths.map((p) => readFile(p, 'utf8')));
  const detector = OpenCvDetector.load(face as string, eye as string);
  const img = await decodeImage(await readFile(path), { maxBytes: cfg.limits.maxImageBytes, maxPixels: cfg.limits.maxImagePixels, order: 'bgr' });
  const scanned = align ? (await deepfaceBorder(img)).image : img;
  const t = await detector.trace(scanned);
  return {
    path,
    align,
    width: scanned.width,
    height: scanned.height,
    faces: t.faces.map((f) => ({
      x: f.x, y: f.y, w: f.w, h: f.h, reject_level: f.rejectLevel, level_weight: f.levelWeight, left_eye: f.left_eye, right_eye: f.right_eye, group: f.group,
    })),
    windows: t.windows,
  };
}

/** JSON with one line per field, and one line per element of a list (windows run to thousands). */
function lines(o: Record<string, unknown>): string {
  const fields = Object.entries(o).map(([k, v]) =>
    Array.isArray(v) ? `${JSON.stringify(k)}: [${v.length ? `\n  ${v.map((x) => JSON.stringify(x)).join(',\n  ')}\n ` : ''}]` : `${JSON.stringify(k)}: ${JSON.stringify(v)}`,
  );
  return `{\n ${fields.join(',\n ')}\n}\n`;
}

export async function run(args: string[]): Promise<number> {
  const [what, ...rest] = args;
  if (what === 'haar-windows') {
    const flags = rest.filter((a) => a.startsWith('--'));
    const at = rest.indexOf('--against');
    const against = at >= 0 ? rest[at + 1] : undefined;
    const positional = rest.filter((a, i) => !a.startsWith('--') && !(at >= 0 && i === at + 1));
    const unknown = flags.filter((f) => f !== '--no-align' && f !== '--against');
    if (positional.length !== 1 || unknown.length > 0 || (at >= 0 && (against === undefined || against.startsWith('--')))) {
      process.stderr.write(unknown.length ? `unknown option ${unknown[0]}\n${USAGE}` : USAGE);
      return 2;
    }
    const ours = await haarWindows(positional[0] as string, !flags.includes('--no-align'));
    if (against === undefined) {
      process.stdout.write(lines(ours));
      return 0;
    }
    const theirs = JSON.parse(await readFile(against, 'utf8')) as { windows: Window[]; faces: unknown[] };
    const diff = compareWindows(ours as unknown as Parameters<typeof compareWindows>[0], theirs);
    process.stdout.write(lines(diff));
    const same = (diff['only_ours'] as unknown[]).length === 0 && (diff['only_opencv'] as unknown[]).length === 0;
    return same ? 0 : 1;
  }
  process.stderr.write(what === undefined ? USAGE : `unknown debug view ${JSON.stringify(what)}\n${USAGE}`);
  return 2;
}
