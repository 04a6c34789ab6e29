/** Request bodies shared by the service-level suites: the same JSON for DeepFace's API and ours. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEEPFACE_DATA } from './paths.js';

export function dataUri(name: string): string {
  const bytes = readFileSync(join(DEEPFACE_DATA, name));
  const type = name.endsWith('.png') ? 'png' : 'jpeg';
  return `data:image/${type};base64,${bytes.toString('base64')}`;
}

/** DeepFace's own test pair (img1/img2, same person); Dlib with the opencv detector. */
export function verifyBody(detector = 'opencv'): string {
  return JSON.stringify({ img1: dataUri('img1.jpg'), img2: dataUri('img2.jpg'), model_name: 'Dlib', detector_backend: detector });
}

export function representBody(detector = 'opencv'): string {
  return JSON.stringify({ img: dataUri('img1.jpg'), model_name: 'Dlib', detector_backend: detector });
}
