/**
 * The `opencv` detector loaded as the model server's `haar` adapter loads it
 * (src/model-server/adapters.ts): the XML text of OpenCV's two cascades, given to OpenCvDetector.load.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { OpenCvDetector } from '../../src/native/detect.js';

export const HAAR_FILES = ['haarcascade_frontalface_default.xml', 'haarcascade_eye.xml'] as const;

export async function loadHaar(weightsDir: string): Promise<OpenCvDetector> {
  const [face, eye] = await Promise.all(HAAR_FILES.map((f) => readFile(join(weightsDir, f), 'utf8')));
  return OpenCvDetector.load(face!, eye!);
}
