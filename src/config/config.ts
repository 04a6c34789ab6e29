import { resolve } from 'node:path';
import { homedir } from 'node:os';
import { isIP } from 'node:net';
import { VARS, CLIENT_VARS, type VarSpec, type VarName } from './spec.js';
import { SOURCE_KINDS, type SourceKind } from '../vocabulary/closed-sets.js';

/** Raised for a configuration that cannot be used; the process refuses to start with its message. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Raw = Record<VarName, string>;

function parseOne(spec: VarSpec, raw: string): unknown {
  switch (spec.kind) {
    case 'int':
    case 'float': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n) || (spec.kind === 'int' && !Number.isInteger(n))) {
        throw new ConfigError(`${spec.name} must be ${spec.kind === 'int' ? 'an integer' : 'a number'}, got ${JSON.stringify(raw)}`);
      }
      if (spec.min !== undefined && n < spec.min) throw new ConfigError(`${spec.name} must be >= ${spec.min}`);
      if (spec.max !== undefined && n > spec.max) throw new ConfigError(`${spec.name} must be <= ${spec.max}`);
      return n;
    }
    case 'bool': {
      const v = raw.trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(v)) return true;
      if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
      throw new ConfigError(`${spec.name} must be true or false, got ${JSON.stringify(raw)}`);
    }
    case 'enum':
      if (!spec.values?.includes(raw)) throw new ConfigError(`${spec.name} must be one of ${spec.values?.join(', ')}, got ${JSON.stringify(raw)}`);
      return raw;
    case 'list':
      return raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    case 'string':
      return raw;
  }
}

/** The validated configuration. Built once by `loadConfig`; never read process.env elsewhere. */
export interface Config {
  host: string;
  ports: { gateway: number; mcp: number; console: number; modelServer: number; metrics: number };
  /** FACECOMPUTE_METRICS_HOST: where the admin listener (ports.metrics) binds. */
  metricsHost: string;
  /** Static model-server replicas; the local child's URL when neither these nor DNS are configured. */
  modelServerUrls: string[];
  modelServer: {
    /** Bind address of `facecompute model-server`. */
    host: string;
    /** The shared internal token ('' = none); checked by model servers, sent by gateway and MCP. */
    internalToken: string;
    /** Replicas discovered from a host name's A/AAAA records (null = off). */
    dns: { url: string; intervalMs: number; servers: string[] } | null;
    /** FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES: what one model server may hold, models included. */
    memoryBudgetBytes: number;
  };
  dataDir: string;
  databaseUrl: string;
  redisUrl: string;
  models: {
    weightsDir: string;
    cacheDir: string;
    /** FACECOMPUTE_WEIGHT_SOURCES: canonical and/or registry ecosystems, validated. */
    weightSources: SourceKind[];
    allowedModels: string[];
    defaultModel: string;
    allowedDetectors: string[];
    defaultDetector: string;
    prewarm: string[];
    /** FACECOMPUTE_ALLOW_DEGRADED_START: start even when the configured defaults cannot be served. */
    allowDegradedStart: boolean;
    /** FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR: refuse to start without the detector fallback's detector. */
    requireFallbackDetector: boolean;
    retinafaceBackbone: 'auto' | 'resnet50' | 'mobilenet0.25';
    testWeights: boolean;
    python: string;
    ort: { intraOpThreads: number; interOpThreads: number; provider: 'cpu' | 'cuda' };
    batchWindowMs: number;
    batchMax: number;
  };
  inputs: {
    remoteImages: 'off' | 'allowlist' | 'public';
    remoteOrigins: string[];
    localImagesRoot: string;
    remoteTimeoutMs: number;
    /** Per-account budget of remote fetches: fetches and bytes per minute. */
    remoteFetchesPerMinute: number;
    remoteFetchBytesPerMinute: number;
    remoteMaxRedirects: number;
  };
  limits: {
    maxRequestBytes: number;
    maxImageBytes: number;
    maxImagePixels: number;
    /** Decoded pixels of all images of one request (FACECOMPUTE_MAX_REQUEST_PIXELS). */
    maxRequestPixels: number;
    maxTargets: number;
    maxSources: number;
    maxCompareResults: number;
    maxCompareBytes: number;
    /** Values one JSON body may hold outside /compare's lifted targets (src/http/json-body.ts). */
    maxJsonValues: number;
    /** V8 old-generation growth after a full collection, percent; 0: V8's own heuristics (src/gateway/heap.ts). */
    heapGrowthPercent: number;
    maxBatchImages: number;
    maxUpstreamResponseBytes: number;
    detectorMaxSide: number;
    fallbackMinFaceSide: number;
    fallbackCentreSpan: number;
  };
  capacity: {
    queueCapacity: number;
    queueTimeoutMs: number;
    upstreamConcurrency: number;
    upstreamTimeoutMs: number;
    drainTimeoutMs: number;
    requestReceiveTimeoutMs: number;
    rateLimitRequests: number;
    rateLimitWindowMs: number;
    rateLimitConcurrent: number;
    /** Request bodies held at once by the gateway process, bytes (FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES). */
    maxInflightBodyBytes: number;
    /** One account's share of it (FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES_PER_ACCOUNT). */
    maxInflightBodyBytesPerAccount: number;
    /** Slowest average upload rate, bytes/s, checked after the grace (0: off). */
    minUploadBytesPerS: number;
    uploadGraceMs: number;
    /** Requests lost with their model server per account and window before image requests are refused. */
    strikeLimit: number;
    strikeWindowMs: number;
    admission: 'deadline' | 'capacity';
    /** Fraction of the queue timeout kept free at deadline admission for the estimate's error. */
    queueHeadroom: number;
    readinessTimeoutMs: number;
    readinessCacheMs: number;
  };
  /** Supervision of `serve`'s model-server child. */
  supervisor: { backoffMs: number; backoffMaxMs: number; crashloopRestarts: number; crashloopWindowMs: number; modelServerNice: number };
  /** FACECOMPUTE_PRODUCTION: each component's start-up checks (production.ts). */
  production: boolean;
  accounts: {
    freeCalls: { anonymous: number; account: number; card: number };
    signupRateLimit: number;
    /** Signups of both kinds per IPv6 /48 per hour. */
    signupRateLimitPer48: number;
    emailSignupRateLimit: number;
    emailVerifyTtlMs: number;
    login: { freeFailures: number; maxDelayMs: number; addressFailuresPerHour: number };
    trustedProxies: string[];
    billingProvider: 'test' | 'stripe';
    stripeApiBase: string;
    stripeSecretKey: string;
    stripeWebhookSecret: string;
    card: { accountsPerFingerprint: number; attemptsPerAccount: number; attemptsPerAddress: number };
    mail: { mailer: 'file' | 'smtp'; smtpUrl: string; from: string };
    cookieSecure: 'auto' | 'true' | 'false';
    sessionIdleMs: number;
    publicBaseUrl: string;
    publicMcpUrl: string;
    publicConsoleUrl: string;
  };
  mcp: { allowedOrigins: string[]; maxBodyBytes: number; strictUrls: boolean };
  /** Per-request usage records (src/accounts/usage/): retention in days (0: none) and the batch interval. */
  usage: { retentionDays: number; flushMs: number };
  logLevel: string;
}

function defaultCacheDir(env: NodeJS.ProcessEnv): string {
  const xdg = env['XDG_CACHE_HOME'];
  return resolve(xdg && xdg.length > 0 ? xdg : resolve(homedir(), '.cache'), 'facecompute');
}

/**
 * Reads every FACECOMPUTE_* variable from `env`, applies defaults and validates. Unknown
 * FACECOMPUTE_* variables are refused so that a typo never silently falls back to a default; the
 * clients' own variables (CLIENT_VARS) are known and ignored.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const known = new Set<string>([...VARS.map((v) => v.name), ...CLIENT_VARS.map((v) => v.name)]);
  for (const key of Object.keys(env)) {
    // FACECOMPUTE_TEST_* names belong to the test harness (scripts/test-services.sh), not the service.
    if (key.startsWith('FACECOMPUTE_') && !known.has(key) && !key.startsWith('FACECOMPUTE_TEST_')) {
      throw new ConfigError(`unknown configuration variable ${key}`);
    }
  }
  const raw = {} as Raw;
  const v = {} as Record<VarName, any>;
  for (const spec of VARS as readonly VarSpec[]) {
    const value = env[spec.name] ?? spec.default;
    raw[spec.name as VarName] = value;
    v[spec.name as VarName] = parseOne(spec, value);
  }
  const host: string = v.FACECOMPUTE_HOST;
  const cfg: Config = {
    host,
    ports: {
      gateway: v.FACECOMPUTE_GATEWAY_PORT,
      mcp: v.FACECOMPUTE_MCP_PORT,
      console: v.FACECOMPUTE_CONSOLE_PORT,
      modelServer: v.FACECOMPUTE_MODEL_SERVER_PORT,
      metrics: v.FACECOMPUTE_METRICS_PORT,
    },
    metricsHost: v.FACECOMPUTE_METRICS_HOST,
    modelServerUrls: v.FACECOMPUTE_MODEL_SERVER_URLS,
    modelServer: {
      host: v.FACECOMPUTE_MODEL_SERVER_HOST,
      internalToken: v.FACECOMPUTE_INTERNAL_TOKEN,
      dns: v.FACECOMPUTE_MODEL_SERVER_DNS
        ? { url: v.FACECOMPUTE_MODEL_SERVER_DNS, intervalMs: v.FACECOMPUTE_MODEL_SERVER_DNS_INTERVAL_MS, servers: v.FACECOMPUTE_MODEL_SERVER_DNS_SERVERS }
        : null,
      memoryBudgetBytes: v.FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES,
    },
    dataDir: resolve(v.FACECOMPUTE_DATA_DIR),
    databaseUrl: v.FACECOMPUTE_DATABASE_URL,
    redisUrl: v.FACECOMPUTE_REDIS_URL,
    models: {
      weightsDir: v.FACECOMPUTE_WEIGHTS_DIR ? resolve(v.FACECOMPUTE_WEIGHTS_DIR) : '',
      cacheDir: v.FACECOMPUTE_MODELS_CACHE ? resolve(v.FACECOMPUTE_MODELS_CACHE) : defaultCacheDir(env),
      weightSources: v.FACECOMPUTE_WEIGHT_SOURCES,
      allowedModels: v.FACECOMPUTE_ALLOWED_MODELS,
      defaultModel: v.FACECOMPUTE_DEFAULT_MODEL,
      allowedDetectors: v.FACECOMPUTE_ALLOWED_DETECTORS,
      defaultDetector: v.FACECOMPUTE_DEFAULT_DETECTOR,
      prewarm: v.FACECOMPUTE_PREWARM,
      allowDegradedStart: v.FACECOMPUTE_ALLOW_DEGRADED_START,
      requireFallbackDetector: v.FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR,
      retinafaceBackbone: v.FACECOMPUTE_RETINAFACE_BACKBONE,
      testWeights: v.FACECOMPUTE_TEST_WEIGHTS,
      python: v.FACECOMPUTE_PYTHON,
      ort: {
        intraOpThreads: v.FACECOMPUTE_ORT_INTRA_OP_THREADS,
        interOpThreads: v.FACECOMPUTE_ORT_INTER_OP_THREADS,
        provider: v.FACECOMPUTE_ORT_PROVIDER,
      },
      batchWindowMs: v.FACECOMPUTE_BATCH_WINDOW_MS,
      batchMax: v.FACECOMPUTE_BATCH_MAX,
    },
    inputs: {
      remoteImages: v.FACECOMPUTE_REMOTE_IMAGES,
      remoteOrigins: v.FACECOMPUTE_REMOTE_ORIGINS,
      localImagesRoot: v.FACECOMPUTE_LOCAL_IMAGES_ROOT ? resolve(v.FACECOMPUTE_LOCAL_IMAGES_ROOT) : '',
      remoteTimeoutMs: v.FACECOMPUTE_REMOTE_TIMEOUT_MS,
      remoteFetchesPerMinute: v.FACECOMPUTE_REMOTE_FETCHES_PER_MINUTE,
      remoteFetchBytesPerMinute: v.FACECOMPUTE_REMOTE_FETCH_BYTES_PER_MINUTE,
      remoteMaxRedirects: v.FACECOMPUTE_REMOTE_MAX_REDIRECTS,
    },
    limits: {
      maxRequestBytes: v.FACECOMPUTE_MAX_REQUEST_BYTES,
      maxImageBytes: v.FACECOMPUTE_MAX_IMAGE_BYTES,
      maxImagePixels: v.FACECOMPUTE_MAX_IMAGE_PIXELS,
      maxRequestPixels: v.FACECOMPUTE_MAX_REQUEST_PIXELS,
      maxTargets: v.FACECOMPUTE_MAX_TARGETS,
      maxSources: v.FACECOMPUTE_MAX_SOURCES,
      maxCompareResults: v.FACECOMPUTE_MAX_COMPARE_RESULTS,
      maxCompareBytes: v.FACECOMPUTE_MAX_COMPARE_BYTES,
      maxJsonValues: v.FACECOMPUTE_MAX_JSON_VALUES,
      heapGrowthPercent: v.FACECOMPUTE_HEAP_GROWTH_PERCENT,
      maxBatchImages: v.FACECOMPUTE_MAX_BATCH_IMAGES,
      maxUpstreamResponseBytes: v.FACECOMPUTE_MAX_UPSTREAM_RESPONSE_BYTES,
      detectorMaxSide: v.FACECOMPUTE_DETECTOR_MAX_SIDE,
      fallbackMinFaceSide: v.FACECOMPUTE_FALLBACK_MIN_FACE_SIDE,
      fallbackCentreSpan: v.FACECOMPUTE_FALLBACK_CENTRE_SPAN,
    },
    capacity: {
      queueCapacity: v.FACECOMPUTE_QUEUE_CAPACITY,
      queueTimeoutMs: v.FACECOMPUTE_QUEUE_TIMEOUT_MS,
      upstreamConcurrency: v.FACECOMPUTE_UPSTREAM_CONCURRENCY,
      upstreamTimeoutMs: v.FACECOMPUTE_UPSTREAM_TIMEOUT_MS,
      drainTimeoutMs: v.FACECOMPUTE_DRAIN_TIMEOUT_MS,
      requestReceiveTimeoutMs: v.FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS,
      rateLimitRequests: v.FACECOMPUTE_RATE_LIMIT_REQUESTS,
      rateLimitWindowMs: v.FACECOMPUTE_RATE_LIMIT_WINDOW_MS,
      rateLimitConcurrent: v.FACECOMPUTE_RATE_LIMIT_CONCURRENT,
      maxInflightBodyBytes: v.FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES,
      maxInflightBodyBytesPerAccount: v.FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES_PER_ACCOUNT,
      minUploadBytesPerS: v.FACECOMPUTE_MIN_UPLOAD_BYTES_PER_S,
      uploadGraceMs: v.FACECOMPUTE_UPLOAD_GRACE_MS,
      strikeLimit: v.FACECOMPUTE_STRIKE_LIMIT,
      strikeWindowMs: v.FACECOMPUTE_STRIKE_WINDOW_MS,
      admission: v.FACECOMPUTE_QUEUE_ADMISSION,
      queueHeadroom: v.FACECOMPUTE_QUEUE_HEADROOM,
      readinessTimeoutMs: v.FACECOMPUTE_READINESS_TIMEOUT_MS,
      readinessCacheMs: v.FACECOMPUTE_READINESS_CACHE_MS,
    },
    supervisor: {
      backoffMs: v.FACECOMPUTE_RESTART_BACKOFF_MS,
      backoffMaxMs: v.FACECOMPUTE_RESTART_BACKOFF_MAX_MS,
      crashloopRestarts: v.FACECOMPUTE_CRASHLOOP_RESTARTS,
      crashloopWindowMs: v.FACECOMPUTE_CRASHLOOP_WINDOW_MS,
      modelServerNice: v.FACECOMPUTE_MODEL_SERVER_NICE,
    },
    accounts: {
      freeCalls: {
        anonymous: v.FACECOMPUTE_FREE_CALLS_ANONYMOUS,
        account: v.FACECOMPUTE_FREE_CALLS_ACCOUNT,
        card: v.FACECOMPUTE_FREE_CALLS_CARD,
      },
      signupRateLimit: v.FACECOMPUTE_SIGNUP_RATE_LIMIT,
      signupRateLimitPer48: v.FACECOMPUTE_SIGNUP_RATE_LIMIT_PER_48,
      emailSignupRateLimit: v.FACECOMPUTE_EMAIL_SIGNUP_RATE_LIMIT,
      emailVerifyTtlMs: v.FACECOMPUTE_EMAIL_VERIFY_TTL_MS,
      login: {
        freeFailures: v.FACECOMPUTE_LOGIN_FREE_FAILURES,
        maxDelayMs: v.FACECOMPUTE_LOGIN_MAX_DELAY_MS,
        addressFailuresPerHour: v.FACECOMPUTE_LOGIN_ADDRESS_FAILURES_PER_HOUR,
      },
      trustedProxies: v.FACECOMPUTE_TRUSTED_PROXIES,
      billingProvider: v.FACECOMPUTE_BILLING_PROVIDER,
      stripeApiBase: v.FACECOMPUTE_STRIPE_API_BASE,
      stripeSecretKey: v.FACECOMPUTE_STRIPE_SECRET_KEY,
      stripeWebhookSecret: v.FACECOMPUTE_STRIPE_WEBHOOK_SECRET,
      card: {
        accountsPerFingerprint: v.FACECOMPUTE_CARD_ACCOUNTS_PER_FINGERPRINT,
        attemptsPerAccount: v.FACECOMPUTE_CARD_ATTEMPTS_PER_ACCOUNT,
        attemptsPerAddress: v.FACECOMPUTE_CARD_ATTEMPTS_PER_ADDRESS,
      },
      mail: { mailer: v.FACECOMPUTE_MAILER, smtpUrl: v.FACECOMPUTE_SMTP_URL, from: v.FACECOMPUTE_MAIL_FROM },
      cookieSecure: v.FACECOMPUTE_COOKIE_SECURE,
      sessionIdleMs: v.FACECOMPUTE_SESSION_IDLE_MS,
      publicBaseUrl: v.FACECOMPUTE_PUBLIC_BASE_URL || `http://${host}:${v.FACECOMPUTE_GATEWAY_PORT}`,
      publicMcpUrl: v.FACECOMPUTE_PUBLIC_MCP_URL || `http://${host}:${v.FACECOMPUTE_MCP_PORT}/mcp`,
      publicConsoleUrl: v.FACECOMPUTE_PUBLIC_CONSOLE_URL || `http://${host}:${v.FACECOMPUTE_CONSOLE_PORT}`,
    },
    mcp: {
      allowedOrigins: v.FACECOMPUTE_MCP_ALLOWED_ORIGINS,
      maxBodyBytes: v.FACECOMPUTE_MCP_MAX_BODY_BYTES,
      strictUrls: v.FACECOMPUTE_MCP_STRICT_URLS,
    },
    usage: { retentionDays: v.FACECOMPUTE_USAGE_RETENTION_DAYS, flushMs: v.FACECOMPUTE_USAGE_FLUSH_MS },
    logLevel: v.FACECOMPUTE_LOG_LEVEL,
    production: v.FACECOMPUTE_PRODUCTION,
  };
  // The Stripe key and webhook secret are the console's alone (production.ts checks them there), so
  // that the gateway and MCP pods, which share this configuration, need not hold them.
  checkStripeBase(cfg.accounts.stripeApiBase);
  for (const [name, url] of [['FACECOMPUTE_PUBLIC_BASE_URL', cfg.accounts.publicBaseUrl], ['FACECOMPUTE_PUBLIC_MCP_URL', cfg.accounts.publicMcpUrl], ['FACECOMPUTE_PUBLIC_CONSOLE_URL', cfg.accounts.publicConsoleUrl]] as const) {
    if (!/^https?:\/\/[^/\s]+/.test(url)) throw new ConfigError(`${name} must be an http:// or https:// URL, got ${JSON.stringify(url)}`);
  }
  if (cfg.inputs.remoteImages === 'allowlist' && cfg.inputs.remoteOrigins.length === 0) {
    throw new ConfigError('FACECOMPUTE_REMOTE_ORIGINS is required when FACECOMPUTE_REMOTE_IMAGES=allowlist');
  }
  const badSource = cfg.models.weightSources.find((s) => !SOURCE_KINDS.includes(s));
  if (badSource !== undefined || cfg.models.weightSources.length === 0) {
    throw new ConfigError(`FACECOMPUTE_WEIGHT_SOURCES must list one or more of ${SOURCE_KINDS.join(', ')}${badSource !== undefined ? `, got ${JSON.stringify(badSource)}` : ''}`);
  }
  checkModelServerLink(cfg);
  if (cfg.modelServerUrls.length === 0 && !cfg.modelServer.dns) {
    // The local child (`serve`), reached where it binds; a wildcard bind is reached on loopback.
    const h = cfg.modelServer.host.replace(/^\[(.*)\]$/, '$1');
    const at = h === '0.0.0.0' || h === '::' || h === 'localhost' ? '127.0.0.1' : isIP(h) === 6 ? `[${h}]` : h;
    cfg.modelServerUrls = [`http://${at}:${cfg.ports.modelServer}`];
  }
  return cfg;
}

/** Loopback hosts, where plain HTTP never leaves the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** Card data and the secret key travel to Stripe: https, or plain HTTP to a loopback stripe-mock only. */
function checkStripeBase(base: string): void {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new ConfigError(`FACECOMPUTE_STRIPE_API_BASE: ${JSON.stringify(base)} is not a URL`);
  }
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return;
  throw new ConfigError('FACECOMPUTE_STRIPE_API_BASE must be an https:// URL (http:// only to a loopback host, e.g. stripe-mock in tests)');
}

/** At least 32 visible ASCII characters: it travels in a header, and a short secret can be guessed. */
const TOKEN_RE = /^[\x21-\x7e]{32,}$/;

/** Validates the model-server URLs, the discovery name and the internal token (never echoing it). */
function checkModelServerLink(cfg: Config): void {
  const { internalToken, dns, host } = cfg.modelServer;
  if (internalToken !== '' && !TOKEN_RE.test(internalToken)) {
    throw new ConfigError('FACECOMPUTE_INTERNAL_TOKEN must be at least 32 visible ASCII characters without spaces (e.g. `openssl rand -hex 32`)');
  }
  if (host.trim() === '') throw new ConfigError('FACECOMPUTE_MODEL_SERVER_HOST must not be empty');
  for (const u of cfg.modelServerUrls) {
    let url: URL;
    try {
      url = new URL(u);
    } catch {
      throw new ConfigError(`FACECOMPUTE_MODEL_SERVER_URLS: ${JSON.stringify(u)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`FACECOMPUTE_MODEL_SERVER_URLS: ${JSON.stringify(u)} must be http:// or https://`);
    if (url.pathname !== '/' || url.search !== '' || url.username !== '' || url.password !== '') {
      throw new ConfigError(`FACECOMPUTE_MODEL_SERVER_URLS: ${JSON.stringify(u)} must be a base URL (scheme, host and port only)`);
    }
  }
  if (dns) {
    let url: URL;
    try {
      url = new URL(dns.url);
    } catch {
      throw new ConfigError(`FACECOMPUTE_MODEL_SERVER_DNS: ${JSON.stringify(dns.url)} is not a URL`);
    }
    // Replicas are reached at their addresses, so TLS could not verify the name: plain HTTP inside
    // the cluster, protected by the internal token and the NetworkPolicy.
    if (url.protocol !== 'http:') throw new ConfigError('FACECOMPUTE_MODEL_SERVER_DNS must be an http:// URL');
    if (url.pathname !== '/' || url.search !== '' || url.username !== '' || url.password !== '' || url.hostname === '') {
      throw new ConfigError(`FACECOMPUTE_MODEL_SERVER_DNS: ${JSON.stringify(dns.url)} must be http://<host name>[:port]`);
    }
    for (const s of dns.servers) {
      const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(s) ?? /^([^:]+)(?::(\d+))?$/.exec(s) ?? [s, s, undefined];
      const port = m[2] === undefined ? 53 : Number(m[2]);
      if (isIP(m[1] ?? '') === 0 || !(port >= 1 && port <= 65535)) {
        throw new ConfigError(`FACECOMPUTE_MODEL_SERVER_DNS_SERVERS: ${JSON.stringify(s)} must be an IP address, ip:port or [ipv6]:port`);
      }
    }
  }
}

/** Markdown table of every variable and its default, for docs/configuration.md (tools/docs/blocks.ts). */
export function configDocs(): string {
  const rows = (VARS as readonly VarSpec[]).map((s) => `| \`${s.name}\` | ${s.default === '' ? '(unset)' : `\`${s.default}\``} | ${s.doc} |`);
  const clientRows = CLIENT_VARS.map((s) => `| \`${s.name}\` | client-side, ignored by the service | ${s.doc} |`);
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows, ...clientRows].join('\n');
}
