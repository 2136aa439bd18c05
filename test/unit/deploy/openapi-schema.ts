/**
 * A small validator for the OpenAPI v3 structural schemas of CustomResourceDefinitions, covering
 * the keywords deploy/crds uses: type, required, properties, additionalProperties, items, enum,
 * minimum, maximum, minLength, maxLength, minItems, pattern, anyOf / oneOf (of `required`, and of value checks
 * on properties the schema declares outside them), x-kubernetes-preserve-unknown-fields and
 * x-kubernetes-list-type: map.
 *
 * Unknown fields are errors (as `kubectl apply` reports them with its default strict field
 * validation) unless the schema preserves unknown fields. `metadata` is the API server's business:
 * any mapping passes.
 */
export interface Schema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  pattern?: string;
  format?: string;
  description?: string;
  anyOf?: Schema[];
  oneOf?: Schema[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
}

const KNOWN_KEYWORDS = new Set([
  'type', 'required', 'properties', 'additionalProperties', 'items', 'enum', 'minimum', 'maximum', 'minLength', 'maxLength',
  'minItems', 'pattern', 'format', 'description', 'default', 'anyOf', 'oneOf', 'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type', 'x-kubernetes-list-map-keys',
]);

/** Problems that make a schema non-structural or use keywords this validator does not know. */
export function structuralProblems(schema: Schema, path = ''): string[] {
  const out: string[] = [];
  for (const key of Object.keys(schema)) {
    if (!KNOWN_KEYWORDS.has(key)) out.push(`${path || '<root>'}: keyword ${key} is not supported by this validator`);
  }
  if (schema.type === undefined && !schema['x-kubernetes-preserve-unknown-fields']) {
    out.push(`${path || '<root>'}: has no type`);
  }
  if (schema.properties && schema.additionalProperties !== undefined) {
    out.push(`${path}: properties and additionalProperties are mutually exclusive in structural schemas`);
  }
  for (const junctor of ['anyOf', 'oneOf'] as const) {
    for (const branch of schema[junctor] ?? []) out.push(...branchProblems(schema, branch, `${path}.${junctor}`));
  }
  if (schema['x-kubernetes-list-type'] === 'map') {
    for (const key of schema['x-kubernetes-list-map-keys'] ?? []) {
      if (!schema.items?.required?.includes(key)) out.push(`${path}: list map key ${key} must be required in items`);
    }
  }
  for (const [name, sub] of Object.entries(schema.properties ?? {})) out.push(...structuralProblems(sub, `${path}.${name}`));
  if (typeof schema.additionalProperties === 'object') out.push(...structuralProblems(schema.additionalProperties, `${path}[*]`));
  if (schema.items) out.push(...structuralProblems(schema.items, `${path}[]`));
  return out;
}

/** What a structural schema allows in an anyOf / oneOf branch: no type, description or default, and no other junctor. */
const BRANCH_VALUE_CHECKS = new Set(['enum', 'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'pattern']);

/**
 * Problems of one anyOf / oneOf branch: it may require fields and put value checks on properties,
 * each of which the schema must also declare outside the branch (with its type), as a structural
 * schema requires.
 */
function branchProblems(schema: Schema, branch: Schema, path: string): string[] {
  const out: string[] = [];
  const keys = Object.keys(branch);
  if (keys.some((k) => k !== 'required' && k !== 'properties')) out.push(`${path}: only "required" and "properties" are allowed in a branch, got ${keys.join(', ')}`);
  for (const [name, sub] of Object.entries(branch.properties ?? {})) {
    if (schema.properties?.[name] === undefined) out.push(`${path}.${name}: a property checked in a branch must be declared outside it`);
    const bad = Object.keys(sub).filter((k) => !BRANCH_VALUE_CHECKS.has(k));
    if (bad.length > 0) out.push(`${path}.${name}: only value checks are allowed in a branch, got ${bad.join(', ')}`);
  }
  return out;
}

/** Validation errors of `value` against `schema`, each `<path>: <problem>`; [] when valid. */
export function validateAgainst(schema: Schema, value: unknown, path = ''): string[] {
  const at = path || '<root>';
  if (value === undefined) return [];
  if (value === null) return [`${at}: must not be null`];
  const typeProblem = checkType(schema, value);
  if (typeProblem !== null) return [`${at}: ${typeProblem}`];
  const out: string[] = [];
  if (schema.enum && !schema.enum.includes(value)) out.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) out.push(`${at}: ${value} is less than the minimum ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) out.push(`${at}: ${value} is greater than the maximum ${schema.maximum}`);
  }
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && [...value].length < schema.minLength) out.push(`${at}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) out.push(`${at}: longer than ${schema.maxLength}`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) out.push(`${at}: ${JSON.stringify(value)} does not match ${schema.pattern}`);
  }
  if (Array.isArray(value)) out.push(...checkArray(schema, value, path));
  else if (typeof value === 'object') out.push(...checkObject(schema, value as Record<string, unknown>, path));
  return out;
}

function checkType(schema: Schema, value: unknown): string | null {
  switch (schema.type) {
    case undefined: return null;
    case 'object': return isObject(value) ? null : `expected an object, got ${kindOf(value)}`;
    case 'array': return Array.isArray(value) ? null : `expected an array, got ${kindOf(value)}`;
    case 'string': return typeof value === 'string' ? null : `expected a string, got ${kindOf(value)}`;
    case 'integer': return Number.isInteger(value) ? null : `expected an integer, got ${kindOf(value)}`;
    case 'number': return typeof value === 'number' ? null : `expected a number, got ${kindOf(value)}`;
    case 'boolean': return typeof value === 'boolean' ? null : `expected a boolean, got ${kindOf(value)}`;
  }
}

function checkArray(schema: Schema, value: unknown[], path: string): string[] {
  const out: string[] = [];
  if (schema.minItems !== undefined && value.length < schema.minItems) out.push(`${path}: must have at least ${schema.minItems} items`);
  if (schema.items) value.forEach((item, i) => out.push(...validateAgainst(schema.items as Schema, item, `${path}[${i}]`)));
  if (schema['x-kubernetes-list-type'] === 'map') {
    const keys = schema['x-kubernetes-list-map-keys'] ?? [];
    const seen = new Set<string>();
    value.forEach((item, i) => {
      const id = JSON.stringify(keys.map((k) => (item as Record<string, unknown>)[k]));
      if (seen.has(id)) out.push(`${path}[${i}]: duplicate entry for keys ${keys.join(', ')} = ${id}`);
      seen.add(id);
    });
  }
  return out;
}

function checkObject(schema: Schema, value: Record<string, unknown>, path: string): string[] {
  const out: string[] = [];
  for (const key of schema.required ?? []) {
    if (value[key] === undefined) out.push(`${path ? `${path}.` : ''}${key}: is required`);
  }
  for (const junctor of ['anyOf', 'oneOf'] as const) {
    const branches = schema[junctor];
    if (!branches) continue;
    const passing = branches.filter((b) => branchHolds(b, value, path)).length;
    const options = branches.map(describeBranch).join(' | ');
    if (junctor === 'anyOf' && passing === 0) out.push(`${path || '<root>'}: must set at least one of ${options}`);
    if (junctor === 'oneOf' && passing !== 1) out.push(`${path || '<root>'}: must set exactly one of ${options}`);
  }
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    const sub = schema.properties?.[key];
    if (sub !== undefined) {
      if (key === 'metadata' && path === '') continue;
      out.push(...validateAgainst(sub, child, childPath));
    } else if (typeof schema.additionalProperties === 'object') {
      out.push(...validateAgainst(schema.additionalProperties, child, childPath));
    } else if (!preserve && schema.additionalProperties !== true) {
      out.push(`${childPath}: unknown field`);
    }
  }
  return out;
}

/** Whether `value` has the fields a branch requires, and they (and its other checked properties present) pass its checks. */
function branchHolds(branch: Schema, value: Record<string, unknown>, path: string): boolean {
  if (!(branch.required ?? []).every((k) => value[k] !== undefined)) return false;
  return Object.entries(branch.properties ?? {}).every(([k, sub]) => validateAgainst(sub, value[k], `${path}.${k}`).length === 0);
}

/** `modelName (minLength 1)+other`: the fields a branch requires, with its checks on them. */
function describeBranch(branch: Schema): string {
  return (branch.required ?? []).map((k) => {
    const checks = Object.entries(branch.properties?.[k] ?? {}).map(([c, v]) => `${c} ${JSON.stringify(v)}`);
    return checks.length === 0 ? k : `${k} (${checks.join(', ')})`;
  }).join('+');
}

function isObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function kindOf(v: unknown): string {
  return Array.isArray(v) ? 'an array' : v === null ? 'null' : typeof v;
}
