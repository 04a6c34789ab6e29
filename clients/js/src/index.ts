/** @facecompute/client: a typed client for the facecompute face-recognition service. */
export { Client, DEFAULT_BASE_URL, DEFAULT_MAX_REMOTE_IMAGE_BYTES } from './client.js';
export { VERSION } from './version.js';
export type { ClientOptions, VerifyResponse, RepresentResponse, RepresentFace, RepresentOneResponse, RepresentBatchResponse, CompareResponse, CapabilitiesResponse, ErrorResponse, VerifyOptions, RepresentOptions, CompareOptions } from './client.js';
export type { ImageInput, EmbeddingInput, TargetsInput } from './inputs.js';
export * from './errors.js';
export type { components, paths } from './generated/openapi.js';
