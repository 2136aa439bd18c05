/**
 * The --help text: every flag and every environment variable of the router, grouped as in
 * docs/configuration.md (a test keeps the two in step). The columns are as wide as the longest
 * name in them, so every description starts at one column however long a name is.
 */

/** A flag, what it does, and its environment equivalent (if any). */
const OPTIONS: readonly (readonly [flag: string, text: string, env?: string])[] = [
  ['--resources FILE', 'YAML file of ModelRoute/ModelServer resources, watched', 'ROUTER_RESOURCES'],
  ['--kubernetes', 'watch ModelRoute/ModelServer/Pods in the cluster', 'ROUTER_SOURCE=kubernetes'],
  ['--port N', 'listen port (default 8080)', 'ROUTER_PORT'],
  ['--host ADDR', 'listen address (default 0.0.0.0)', 'ROUTER_HOST'],
  ['--workers N', 'worker processes (default: available parallelism)', 'ROUTER_WORKERS'],
  ['--version', 'print the version'],
  ['--help', 'print this help'],
];

/** A group's title, or a variable and what it is (the default in brackets); '' as the name continues the line above. */
const ENVIRONMENT: readonly (string | readonly [name: string, text: string])[] = [
  'Process and lifecycle',
  ['ROUTER_SOURCE', 'file (default) or kubernetes'],
  ['ROUTER_DRAIN_DELAY', 'on SIGTERM, /readyz answers 503 this long before the listener closes (5s; 0 = none)'],
  ['ROUTER_DRAIN_TIMEOUT', 'how long SIGTERM then waits for in-flight requests (30s)'],
  ['ROUTER_WORKER_WATCHDOG', 'a worker that says nothing to the primary this long (event loop blocked, process stopped) is killed and restarted (30s; 0 = never)'],
  ['ROUTER_ALLOW_UWS_FALLBACK', 'no longer supported: true stops the router at start (false)'],
  ['ROUTER_LOG_FORMAT', "operational log on stderr: json or text (default: ACCESS_LOG_FORMAT's choice)"],
  ['ROUTER_WORKER_SEMI_SPACE_MB', "each worker's V8 young generation, MB per semi-space; 0 = V8's sizing (16)"],
  'Resources',
  ['ROUTER_API_GROUP', 'API group of the resources (networking.serving.volcano.sh)'],
  ['ROUTER_NAMESPACE', 'Kubernetes namespace to watch (all)'],
  ['ROUTER_GATEWAY', 'serve only the ModelRoutes bound to this Gateway, <namespace>/<name> (all routes)'],
  ['ROUTER_RESOURCES_MAX_BYTES', 'largest resources file read; larger: exit 2 at start, refused on reload (4194304)'],
  'Requests and upstream',
  ['ROUTER_UPSTREAM_TIMEOUT', 'when a ModelServer sets no trafficPolicy.timeout (300s)'],
  ['ROUTER_UPSTREAM_CONNECTIONS', 'most connections a worker opens to one pod; more requests wait (1024)'],
  ['ROUTER_UPSTREAM_IDLE_TIMEOUT', "an unused connection to a pod is closed after this; keep it below the pod's own keep-alive (4s)"],
  ['ROUTER_UPSTREAM_CONNECT_TIMEOUT', 'a new connection to a pod not open after this fails; the request moves to another pod (5s)'],
  ['ROUTER_UPSTREAM_IDLE_RACE', 'a reused connection to a pod that breaks this soon after the send, before any answer, is taken for an idle close: the request goes out once more (20ms; 0: never)'],
  ['ROUTER_MAX_BODY_BYTES', 'larger request bodies get 413 (16777216)'],
  ['ROUTER_MAX_HEADER_BYTES', 'larger request heads get 431 (65536; the uWS 20.30 build has its own: 4 KiB for a head arriving in pieces)'],
  ['ROUTER_TLS_CERT_FILE', 'PEM certificate (and chain) to serve HTTPS with; with ROUTER_TLS_KEY_FILE (none: plain HTTP)'],
  ['ROUTER_TLS_KEY_FILE', 'PEM private key of that certificate, not encrypted'],
  'Scheduling',
  ['ROUTER_SCHEDULER_CONFIG', 'YAML file of scorer weights, queue filter and prefix cache (built-in default)'],
  ['ROUTER_POD_METRICS_INTERVAL', "how often the primary scrapes vLLM/SGLang pods' /metrics (1s)"],
  ['ROUTER_OUTLIER_CONSECUTIVE_FAILURES', 'connect failures or timeouts in a row that eject a pod (3)'],
  ['ROUTER_OUTLIER_CONSECUTIVE_5XX', 'answers 500, 502, 504 or 503 without retry-after in a row that eject a pod, 0 = never (5)'],
  ['ROUTER_OUTLIER_BASE_EJECTION', 'first ejection of a pod, doubled on each one in a row (5s)'],
  ['ROUTER_OUTLIER_MAX_EJECTION', 'longest ejection (5m)'],
  ['ROUTER_FAIRNESS_MAX_CONCURRENT', 'fair queueing: requests of the instance in flight to one ModelServer; more wait, the least-used tenant first (0 = off)'],
  ['ROUTER_FAIRNESS_MAX_QUEUED', 'fair queueing: requests waiting for one ModelServer; more get 503 fair_queue_full (1000)'],
  ['ROUTER_FAIRNESS_QUEUE_TIMEOUT', 'fair queueing: longest wait, then 503 fair_queue_timeout (60s)'],
  ['ROUTER_FAIRNESS_WINDOW', "fair queueing: how far back a tenant's use counts (5m)"],
  ['ROUTER_FAIRNESS_INPUT_TOKEN_WEIGHT', 'fair queueing: weight of an input token in that use (1)'],
  ['ROUTER_FAIRNESS_OUTPUT_TOKEN_WEIGHT', 'fair queueing: weight of an output token in that use (2)'],
  ['ROUTER_FAIRNESS_REQUEST_WEIGHT', 'fair queueing: what each request adds to that use besides its tokens (0)'],
  'Access log',
  ['ACCESS_LOG_ENABLED', 'true (default) or false'],
  ['ACCESS_LOG_FORMAT', 'text (default) or json'],
  ['ACCESS_LOG_OUTPUT', 'stdout (default), stderr or a file path'],
  ['ACCESS_LOG_BUFFER_BYTES', 'bytes queued for a slow sink before records are dropped (16777216)'],
  ['ACCESS_LOG_FLUSH_INTERVAL', 'longest a record waits to be written with later ones (100ms; 0 = end of the turn)'],
  ['ACCESS_LOG_JOURNAL_SOCKET', 'when stdout is the systemd journal, each process streams records to this socket (/run/systemd/journal/stdout); off = the inherited stdout'],
  'Token counting',
  ['ROUTER_TOKEN_ESTIMATOR', 'bpe (default) or chars'],
  ['ROUTER_TOKENIZER_INLINE_MAX_CHARS', 'longer prompts are counted on the tokenizer thread pool (512; docs/tokens.md)'],
  ['ROUTER_TOKENIZER_POOL_SIZE', 'tokenizer threads per process; 0 = none, long prompts estimated (1)'],
  ['ROUTER_TOKENIZER_QUEUE', 'counts waiting for a thread; beyond it, estimated (64)'],
  ['ROUTER_TOKENIZER_BUDGET_MS', 'longest a pooled count may take, its wait included, before it is estimated (200)'],
  ['ROUTER_TOKENIZER_CACHE_CHARS', 'characters of repeated long prompt texts whose counts a process keeps; 0 = none (4000000)'],
  ['ROUTER_TOKENIZER_PARSE_MIN_BYTES', 'request bodies this large are parsed in a tokenizer thread; 0 = all on the event loop (262144)'],
  ['ROUTER_TOKENIZER_CONVERSATION_BYTES', 'memory for long chat conversations kept, per event loop and per tokenizer thread; 0 = none (25165824)'],
  'Rate limits',
  ['RATE_LIMIT_LOCAL_LEASES', 'local limits: workers decide from leased slices (true) or the primary decides (false)'],
  ['RATE_LIMIT_REDIS_FAILURE_MODE', 'global limits while Redis cannot answer: local (default), open or closed'],
  ['RATE_LIMIT_REDIS_TIMEOUT', 'longest wait for Redis (50ms)'],
  ['RATE_LIMIT_REDIS_LEASES', 'global limits: workers admit from slices Redis lends them (true, default) or ask Redis every turn (false)'],
  ['RATE_LIMIT_REDIS_RECALL_WAIT', 'longest a request that fits once leases come back waits for them (500ms; 0 to 2s)'],
  'Redis, for global limits',
  ['REDIS_USERNAME', 'ACL user'],
  ['REDIS_PASSWORD', 'ACL password'],
  ['REDIS_TLS', 'true: connect with TLS (rediss:// addresses always do)'],
  ['REDIS_TLS_CA_FILE', "PEM file of trusted CAs instead of Node's list (which NODE_EXTRA_CA_CERTS extends)"],
  ['REDIS_CLUSTER', 'true: the address names Redis Cluster seed nodes'],
  'Tracing',
  ['OTEL_TRACES_EXPORTER', 'otlp: OpenTelemetry traces over OTLP/HTTP; off unless this or an endpoint is set (docs/tracing.md);'],
  ['', 'also OTEL_SDK_DISABLED, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,'],
  ['', 'OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_HEADERS,'],
  ['', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,'],
  ['', 'OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE, OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_CERTIFICATE,'],
  ['', 'OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_KEY, OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION,'],
  ['', 'OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG,'],
  ['', 'OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE'],
  'Authentication',
  ['ROUTER_AUTH_CONFIG', 'auth file of API keys and JWT settings (off when unset)'],
];

/** Width of a column holding `cells`: the longest one and a gap of two spaces. */
function columnWidth(cells: readonly string[]): number {
  return Math.max(...cells.map((c) => c.length)) + 2;
}

function optionLines(): string[] {
  const flagWidth = columnWidth(OPTIONS.map(([flag]) => flag));
  const textWidth = columnWidth(OPTIONS.filter(([, , env]) => env !== undefined).map(([, text]) => text));
  return OPTIONS.map(([flag, text, env]) => `  ${flag.padEnd(flagWidth)}${env === undefined ? text : `${text.padEnd(textWidth)}[${env}]`}`);
}

function environmentLines(): string[] {
  const width = columnWidth(ENVIRONMENT.flatMap((e) => (typeof e === 'string' ? [] : [e[0]])));
  return ENVIRONMENT.map((e) => (typeof e === 'string' ? ` ${e}` : `  ${e[0].padEnd(width)}${e[1]}`));
}

export const USAGE = [
  'Usage: inference-router --resources FILE [options]',
  '       inference-router --kubernetes [options]',
  '',
  'Options (environment equivalents in brackets; flags win):',
  ...optionLines(),
  '',
  'Environment (durations like 500ms, 30s, 2m, or a number of milliseconds; see docs/configuration.md):',
  ...environmentLines(),
].join('\n');
