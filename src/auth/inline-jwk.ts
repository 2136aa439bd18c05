/**
 * Checks an inline JWK of the auth file (`jwt.jwks.keys[i]`) at load: a key that could not verify
 * any token would otherwise load and leave every token refused with a vague 401 ("not accepted",
 * "no key of the issuer matches it"). Node imports the key as jose later does; the algorithms
 * accepted (authenticator.ts: RS*, PS*, ES256/384/512, EdDSA) need an RSA key of 2048 bits or
 * more (jose's minimum), an EC key on P-256, P-384 or P-521, or an Ed25519 key.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';

const CURVES = new Set(['prime256v1', 'secp384r1', 'secp521r1']);

/** Why the key cannot verify tokens, or null when it can. */
export function unusableJwk(jwk: Record<string, unknown>): string | null {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: jwk as never, format: 'jwk' });
  } catch (err) {
    return `not a usable public key (${(err as Error).message})`;
  }
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  if (type === 'rsa' || type === 'rsa-pss') {
    const bits = details.modulusLength ?? 0;
    return bits >= 2048 ? null : `an RSA key of ${bits} bits; tokens are verified with RSA keys of 2048 bits or more`;
  }
  if (type === 'ec') return CURVES.has(details.namedCurve ?? '') ? null : `an EC key on ${details.namedCurve}, which verifies none of the accepted algorithms (ES256, ES384, ES512 take P-256, P-384, P-521)`;
  if (type === 'ed25519') return null;
  return `an ${type} key, which verifies none of the accepted algorithms (RS*, PS*, ES256/384/512, EdDSA with Ed25519)`;
}
