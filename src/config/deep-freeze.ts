/** Freezes an object and every object reachable from it; returns it. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) Object.freeze(value);
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) if (v !== null && typeof v === 'object') deepFreeze(v);
  }
  return value;
}
