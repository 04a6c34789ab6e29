/** Why fetching a weight file failed: one stable code per cause, the source named in the message. */
export type FetchErrorCode =
  | 'http_error'
  | 'network_error'
  | 'truncated'
  | 'hash_mismatch'
  | 'size_mismatch'
  | 'decompress_failed'
  | 'client_unavailable'
  | 'client_failed'
  | 'not_found'
  | 'member_missing'
  | 'unsupported_archive'
  | 'no_allowed_source'
  | 'all_sources_failed';

/** One source tried by `fetchWeight` and why it failed. */
export interface FetchAttempt {
  source: string;
  code: FetchErrorCode;
  message: string;
}

export class FetchError extends Error {
  override name = 'FetchError';
  constructor(
    readonly code: FetchErrorCode,
    message: string,
    /** With `all_sources_failed`: every source tried, in order. */
    readonly attempts: FetchAttempt[] = [],
  ) {
    super(message);
  }
}
