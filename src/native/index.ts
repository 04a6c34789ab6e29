export { native } from './addon.js';
export { compareOneToMany, compareOneToManyB64, decodeVectorsB64, l2Normalize, packVectors, validateVectors, METRICS, type Metric, type Comparison } from './compare.js';
