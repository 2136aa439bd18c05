/**
 * The answer to a path outside the API. `curl localhost:8080` is a newcomer's first call, and an
 * OpenAI client given the router's address without `/v1` (`base_url="http://host:8080"`) their
 * second: the answer names the paths the router serves, and for an API path without its `/v1`
 * prefix, the one meant.
 */
import { RouterError } from '../errors.js';
import { nearName } from '../config/near-name.js';
import { isPostEndpoint, POST_PATHS } from '../api/api-registry.js';

/** What a path outside the API is told the router serves. */
const SERVED_PATHS = 'inference: POST /v1/completions, /v1/chat/completions, /v1/embeddings, /v1/responses; '
  + 'also GET /v1/models, /v1/models/{id}, /healthz, /readyz, /metrics';

/** API paths as an OpenAI client whose base URL lacks `/v1` asks for them. */
const WITHOUT_V1 = new Set(['/completions', '/chat/completions', '/embeddings', '/responses', '/models']);

/** "did you mean /v1<path>? …" when `path` is an API path without its /v1 prefix, else null. */
function v1Hint(path: string): string | null {
  const bare = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (!WITHOUT_V1.has(bare) && !bare.startsWith('/models/')) return null;
  return `did you mean /v1${bare}? An OpenAI client's base URL ends in /v1 (http://<router>:<port>/v1)`;
}

/** The plain-text answer: the path, the hint when there is one, then what the router serves. */
export function unknownPathText(path: string): string {
  const hint = v1Hint(path);
  return `no such path: ${path}\n${hint === null ? '' : `${hint}\n`}${SERVED_PATHS}\n`;
}

/** The same, as the error a client that accepts JSON (an OpenAI SDK) is answered. */
export function unknownPathError(path: string): RouterError {
  const hint = v1Hint(path);
  return new RouterError('invalid_request', `no such path: ${path}; ${hint ?? SERVED_PATHS}`, 404, null, 'unknown_endpoint');
}

/**
 * Whether a /v1 path repeats its prefix (`/v1/v1/chat/completions`): what a client asks for whose
 * base URL ends in /v1 and that adds /v1 itself. Such a path is no endpoint of any model server,
 * so the router answers it instead of forwarding it.
 */
export function hasV1Twice(url: string): boolean {
  return url.startsWith('/v1/v1') && (url.length === 6 || url.charCodeAt(6) === 47 /* / */);
}

/** The 404 of a path with /v1 twice, naming the path meant (the repeated prefixes dropped). */
export function v1TwiceError(url: string): RouterError {
  let meant = url;
  while (hasV1Twice(meant)) meant = meant.slice(3);
  return new RouterError('invalid_request', `no such path: ${url}; the path has /v1 twice: did you mean ${meant}? `
    + 'An OpenAI client\'s base URL ends in /v1 once (http://<router>:<port>/v1)', 404, null, 'unknown_endpoint');
}

const SHORTEST_NEAR = '/v1/response'.length - 1;
const LONGEST_NEAR = '/v1/chat/completions'.length + 2;

/**
 * The inference endpoint (api-registry's POST_PATHS) `url` is a misspelling of (within two letters, or another case:
 * `/v1/chat/completion`, `/v1/Completions`, a trailing `/`), or null. Such a path is no endpoint
 * of a model server either: forwarded, the pod's 404 would name no cause.
 */
export function misspeltEndpoint(url: string): string | null {
  // An endpoint itself comes here with a query string (which makes it no known path): no edit
  // distances computed for it.
  if (url.length < SHORTEST_NEAR || url.length > LONGEST_NEAR || isPostEndpoint(url)) return null;
  return nearName(url, POST_PATHS);
}

/** The 404 of a misspelt endpoint, naming the one meant. */
export function misspeltEndpointError(url: string, meant: string): RouterError {
  return new RouterError('invalid_request', `no such path: ${url}; did you mean ${meant}?`, 404, null, 'unknown_endpoint');
}
