export { ERROR_STATUS, RETRYABLE_503, isErrorCode, type ErrorCode } from './codes.js';
export { ServiceError, isServiceError, type ErrorBody } from './service-error.js';
export { fromNative } from './native-error.js';
