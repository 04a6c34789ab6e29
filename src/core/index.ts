export { native } from './native.js';
export { compareOneToMany, compareOneToManyB64, decodeVectorsB64, l2Normalize, packVectors, validateVectors, METRICS, type Metric, type Comparison } from './compare.js';
