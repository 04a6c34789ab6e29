// Where one represent's time goes, stage by stage (development aid).
import { readFileSync } from 'node:fs';
import * as img from '../../src/native/image.ts';
import { OpenCvDetector } from '../../src/native/detect.ts';
const W = '../shared/weights/';
const haar = OpenCvDetector.load(readFileSync(W + 'haarcascade_frontalface_default.xml', 'utf8'), readFileSync(W + 'haarcascade_eye.xml', 'utf8'));
const file = process.argv[2] ?? 'img1.jpg';
const bytes = readFileSync('../shared/data/deepface/' + file);
for (let round = 0; round < 2; round++) {
  let t = performance.now();
  const lap = (what: string) => { const n = performance.now(); console.log(what.padEnd(10), (n - t).toFixed(1), 'ms'); t = n; };
  const im = await img.decodeImage(bytes, { maxBytes: 1e8, maxPixels: 1e8, order: 'bgr' }); lap('decode');
  const b = await img.deepfaceBorder(im); lap('border');
  const dets = await haar.detect(b.image); lap('haar');
  const faces = await img.extractFaces(b.image, dets, { align: true, expandPercentage: 0, borderTop: b.top, borderLeft: b.left, originalWidth: im.width, originalHeight: im.height }); lap('extract');
  await img.facesToTensor(faces.map((f) => f.face), { width: 150, height: 150, layout: 'nchw', channelOrder: 'rgb', preprocess: 'uint8_truncate', normalization: 'base' }); lap('tensor');
  console.log(`${im.width}x${im.height} bordered ${b.image.width}x${b.image.height}, ${dets.length} faces`);
}
