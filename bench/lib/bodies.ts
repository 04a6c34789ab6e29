/** Request bodies shared by the service-level suites: the same JSON for DeepFace's API and ours. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEEPFACE_DATA } from './paths.js';

export function dataUri(name: string): string {
  const bytes = readFileSync(join(DEEPFACE_DATA, name));
  const type = name.endsWith('.png') ? 'png' : 'jpeg';
  return `data:image/${type};base64,${bytes.toString('base64')}`;
}

/**
 * The service-level pair: img5.jpg (330x512) and img6.jpg (750x1050), the same person in DeepFace's
 * test set, photo sizes typical of API traffic. (DeepFace's img1/img2 are 2.6 and 1.8 Mpx; with
 * align=True the opencv detector scans them bordered to 4x the pixels, several seconds per request
 * on either side, which leaves too few answers per run on this machine; the library suite uses them.)
 */
export const SERVICE_PAIR = ['img5.jpg', 'img6.jpg'] as const;

export function verifyBody(detector = 'opencv', model = 'Dlib'): string {
  return JSON.stringify({ img1: dataUri(SERVICE_PAIR[0]), img2: dataUri(SERVICE_PAIR[1]), model_name: model, detector_backend: detector });
}

export function representBody(detector = 'opencv', model = 'Dlib'): string {
  return JSON.stringify({ img: dataUri('img1.jpg'), model_name: model, detector_backend: detector });
}
