/**
 * Why a list or watch failed, as the log line says it: a request that got no HTTP answer keeps its
 * whole reason and names the API server, however long its URL; an HTTP refusal keeps the API
 * server's own message.
 */
import { describe, expect, test } from 'vitest';
import { describeError } from '../../../src/config/kubernetes-informer.js';
import { missingCredentialFile } from '../../../src/config/kubernetes-config-check.js';

const SERVER = 'https://inference-cluster-api.eu-west-1.internal.example.com:6443';

/** What node-fetch rejects with when the connection fails (FetchError: type system, code, the URL in its message). */
function fetchError(url: string, reason: string, code: string): Error {
  return Object.assign(new Error(`request to ${url} failed, reason: ${reason}`), { name: 'FetchError', type: 'system', code, errno: code });
}

describe('describeError', () => {
  test('refused: the whole reason (the address tried) after the server, even behind a URL over 200 characters', () => {
    const url = `${SERVER}/apis/networking.serving.volcano.sh/v1alpha1/namespaces/inference-production-eu-west/modelservers?allowWatchBookmarks=true&timeoutSeconds=300&watch=true&resourceVersion=918273645`;
    expect(url.length).toBeGreaterThan(200);
    expect(describeError(fetchError(url, 'connect ECONNREFUSED 10.96.0.1:6443', 'ECONNREFUSED'), SERVER))
      .toBe(`connection to the API server at ${SERVER} failed: connect ECONNREFUSED 10.96.0.1:6443`);
  });

  test('a name that does not resolve, a timeout: named too', () => {
    expect(describeError(fetchError(`${SERVER}/api/v1/pods`, 'getaddrinfo ENOTFOUND inference-cluster-api.eu-west-1.internal.example.com', 'ENOTFOUND'), SERVER))
      .toBe(`connection to the API server at ${SERVER} failed: getaddrinfo ENOTFOUND inference-cluster-api.eu-west-1.internal.example.com`);
    expect(describeError(fetchError(`${SERVER}/api/v1/pods`, 'connect ETIMEDOUT 10.96.0.1:6443', 'ETIMEDOUT'), SERVER))
      .toBe(`connection to the API server at ${SERVER} failed: connect ETIMEDOUT 10.96.0.1:6443`);
  });

  test('a stream cut: its message and code', () => {
    const cut = Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
    expect(describeError(cut, SERVER)).toBe(`connection to the API server at ${SERVER} failed: Premature close (ERR_STREAM_PREMATURE_CLOSE)`);
    const reset = Object.assign(new Error('aborted'), { cause: { code: 'ECONNRESET', message: 'read ECONNRESET' } });
    expect(describeError(reset, SERVER)).toBe(`connection to the API server at ${SERVER} failed: aborted (ECONNRESET)`);
  });

  test('an HTTP refusal: the status and the API server\'s message, as before', () => {
    const body = JSON.stringify({ kind: 'Status', message: 'pods is forbidden: User "x" cannot list resource "pods"', code: 403 });
    expect(describeError(Object.assign(new Error('HTTP-Code: 403'), { code: 403, body }), SERVER)).toBe('HTTP 403: pods is forbidden: User "x" cannot list resource "pods"');
    expect(describeError(Object.assign(new Error('Service Unavailable'), { statusCode: 503 }), SERVER)).toBe('HTTP 503: Service Unavailable');
  });
});

describe('describeError: secrets and multi-line messages', () => {
  test('a token the HTTP client refused as a header value is not logged; the reason is (its lines joined)', () => {
    const err = Object.assign(new TypeError('Bearer tok-1\n is not a legal HTTP header value'), { code: 'ERR_INVALID_CHAR' });
    const said = describeError(err, SERVER);
    expect(said).not.toContain('tok-1');
    expect(said).toContain('Bearer [redacted] is not a legal HTTP header value');
    expect(describeError(new Error('header Authorization: Basic dXNlcjpwYXNz was refused'), SERVER)).toBe('header Authorization: Basic [redacted] was refused');
  });

  test('client-node\'s ApiException: the status and its Message line, not its headers', () => {
    const err = Object.assign(new Error('HTTP-Code: 401\nMessage: Unauthorized\nBody: undefined\nHeaders: {"connection":"close"}'), { code: 401 });
    expect(describeError(err, SERVER)).toBe('HTTP 401: Unauthorized');
  });
});

describe('missingCredentialFile', () => {
  const here = (paths: string[]) => ({ exists: (p: string) => paths.includes(p), path: '/usr/local/bin:/usr/bin' });
  test('a CA, client certificate or key file that is not there is named with its field; inline data or no file is fine', () => {
    expect(missingCredentialFile({ caFile: '/etc/k/ca.crt' }, null, here([]))).toBe('the certificate-authority file /etc/k/ca.crt does not exist; fix the path, or give the data inline (certificate-authority-data)');
    expect(missingCredentialFile({ caFile: '/etc/k/ca.crt' }, { certFile: '/etc/k/c.crt', keyFile: '/etc/k/c.key' }, here(['/etc/k/ca.crt', '/etc/k/c.crt']))).toContain('the client-key file /etc/k/c.key does not exist');
    expect(missingCredentialFile({}, { certFile: undefined, keyFile: undefined }, here([]))).toBeNull();
  });

  test('an exec credential plugin: found on PATH or at its path, else named', () => {
    const user = (command: string) => ({ name: 'u', exec: { command } } as never);
    expect(missingCredentialFile({}, user('aws'), here(['/usr/bin/aws']))).toBeNull();
    expect(missingCredentialFile({}, user('/opt/bin/gke-auth'), here(['/opt/bin/gke-auth']))).toBeNull();
    expect(missingCredentialFile({}, user('kubelogin'), here([]))).toBe('the exec credential plugin "kubelogin" of user "u" is not on PATH; install it, or give the router another way to authenticate (a token, a client certificate)');
    expect(missingCredentialFile({}, user('/opt/bin/gke-auth'), here([]))).toContain('"/opt/bin/gke-auth" of user "u" is not there');
  });
});
