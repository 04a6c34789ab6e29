import { readFileSync } from 'node:fs';
import { encodeFrame } from '../../src/model-client/protocol.ts';
const D = '/work/shared/data/deepface/';
// argv: [detector, default opencv] [model, default Facenet, the contract's default]
const opts = { model_name: process.argv[3] ?? 'Facenet', detector_backend: process.argv[2] ?? 'opencv', align: true, enforce_detection: true, expand_percentage: 0, normalization: 'base' };
async function post(path: string, header: any, images: Buffer[]) {
  const t = performance.now();
  const r = await fetch('http://127.0.0.1:8190' + path, { method: 'POST', headers: { 'content-type': 'application/vnd.facecompute.frame' }, body: encodeFrame(header, images) });
  const j: any = await r.json();
  return { status: r.status, ms: Math.round(performance.now() - t), j };
}
const a = readFileSync(D + 'img1.jpg'), b = readFileSync(D + 'img2.jpg'), c = readFileSync(D + 'img3.jpg');
let v = await post('/internal/verify', { op: 'verify', ...opts, img1: { image: 0 }, img2: { image: 1 }, distance_metric: 'cosine', threshold: null }, [a, b]);
console.log('verify 1-2', v.status, v.ms, JSON.stringify(v.j));
v = await post('/internal/verify', { op: 'verify', ...opts, img1: { image: 0 }, img2: { image: 1 }, distance_metric: 'cosine', threshold: null }, [a, c]);
console.log('verify 1-3', v.status, v.ms, v.j.verified, v.j.distance, v.j.confidence);
const r = await post('/internal/represent', { op: 'represent', ...opts, images: [0], max_faces: null, l2_normalize: false }, [a]);
console.log('represent', r.status, r.ms, JSON.stringify(r.j.results[0][0].facial_area), r.j.results[0][0].face_confidence, r.j.results[0][0].embedding.slice(0, 3));
