/** Request headers never forwarded upstream (hop-by-hop, or recomputed by the router). */
const DROP_REQUEST = new Set([
  'host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'te', 'trailer', 'upgrade',
  'proxy-authorization', 'proxy-connection', 'expect', 'x-request-id',
]);

/** Response headers never copied to the client (hop-by-hop, or written by uWS itself). */
const DROP_RESPONSE = new Set([
  'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'trailer', 'upgrade', 'proxy-connection',
  'x-request-id',
  // uWS writes its own server header; a uWS backend's copy would appear twice.
  'uwebsockets',
]);

export function forwardRequestHeader(lowerName: string): boolean {
  return !DROP_REQUEST.has(lowerName);
}

export function forwardResponseHeader(lowerName: string): boolean {
  return !DROP_RESPONSE.has(lowerName);
}
