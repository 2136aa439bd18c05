/**
 * The Helm chart (deploy/helm/inference-router): `helm lint` and `helm template` with the default
 * values and with every optional part on, and what the rendered objects must hold. helm comes from
 * HELM, PATH, or .ci/install-helm.sh's cache; without it these tests are skipped with the reason.
 * The chart's copies of the CRDs and alert rules must equal the files under deploy/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseSettings } from '../../../src/config/settings.js';
import { parseAccessLogSettings } from '../../../src/observe/access-log-settings.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { parseTraceSettings } from '../../../src/observe/trace-settings.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const CHART = join(ROOT, 'deploy/helm/inference-router');
type Doc = Record<string, any>;

function findHelm(): string | null {
  const candidates = [process.env.HELM, join(homedir(), '.cache/inference-router-helm/helm'), 'helm'].filter((c): c is string => !!c);
  for (const c of candidates) {
    try {
      execFileSync(c, ['version', '--short'], { stdio: 'ignore', timeout: 10_000 });
      return c;
    } catch { /* next */ }
  }
  return null;
}
const HELM = findHelm();

const ALL_ON = [
  'autoscaling.enabled=true', 'serviceMonitor.enabled=true', 'prometheusRule.enabled=true', 'networkPolicy.enabled=true',
  'networkPolicy.restrictEgress=true', 'networkPolicy.ingressFrom[0].podSelector.matchLabels.app=gw',
  'networkPolicy.kubeApiCIDRs={10.0.0.10/32}', 'networkPolicy.extraEgress[0].ports[0].port=443', 'auth.config=apiKeys: []',
  'tracing.enabled=true', 'tracing.endpoint=http://otel-collector.observability:4318', 'tracing.sampler=traceidratio', 'tracing.samplerArg=0.1', 'redis.existingSecret=redis-auth', 'redis.caSecret=redis-ca',
  'tls.secretName=router-tls', 'redis.tls=true', 'redis.leases=false', 'redis.recallWait=2s', 'configFiles.scheduler\\.yaml=weights: {}', 'watchNamespace=models', 'drain.delaySeconds=7', 'drain.timeout=1m',
  'gateway=kthena-system/default',
];

function render(set: string[] = [], flags: string[] = []): Doc[] {
  const out = execFileSync(HELM!, ['template', 'r1', CHART, '--namespace', 'ir', ...flags, ...set.flatMap((s) => ['--set', s])], { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });
  return parseAllDocuments(out).map((d) => d.toJS() as Doc).filter((d) => d !== null);
}
/** helm's message for a rendering it refused (stderr), or '' when it rendered. */
function refusal(set: string[], flags: string[] = []): string {
  try {
    render(set, flags);
    return '';
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? err);
  }
}
const SCHEMA = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Doc;
const VALUES = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Doc;
/** The schema node of a dotted values path. */
const schemaAt = (path: string): Doc => path.split('.').reduce((node: Doc, key) => node.properties[key], SCHEMA);
const docsServiceMonitorPort = (): string =>
  render(['serviceMonitor.enabled=true']).find((d) => d.kind === 'ServiceMonitor')!.spec.endpoints[0].port;
const kinds = (docs: Doc[]): string[] => docs.map((d) => d.kind).sort();
const deployment = (docs: Doc[]): Doc => docs.find((d) => d.kind === 'Deployment')!;
const env = (docs: Doc[]): Record<string, any> =>
  Object.fromEntries(deployment(docs).spec.template.spec.containers[0].env.map((e: Doc) => [e.name, e.value ?? e.valueFrom]));

test('values.schema.json (draft-07, what helm validates) describes every value of values.yaml, and refuses others', () => {
  expect(SCHEMA.$schema).toBe('http://json-schema.org/draft-07/schema#');
  const walk = (values: Doc, node: Doc, path: string): void => {
    expect(node.additionalProperties, path || '<root>').toBe(false);
    for (const [k, v] of Object.entries(values)) {
      const child = node.properties?.[k];
      expect(child, `${path}${k}`).toBeDefined();
      expect(child.type ?? child.enum, `${path}${k}`).toBeDefined();
      if (child.type === 'object' && child.additionalProperties === false) walk(v as Doc, child, `${path}${k}.`);
    }
  };
  walk(VALUES, SCHEMA, '');
});

test('the schema\'s ranges are the router\'s own: it takes each bound and refuses one step beyond', () => {
  const starts = (env: Record<string, string>): boolean => {
    try {
      parseSettings(['--resources', 'r.yaml'], env);
      parseAccessLogSettings(env);
      parseRedisLimitSettings(env);
      parseTraceSettings({ OTEL_TRACES_EXPORTER: 'otlp', ...env });
      return true;
    } catch {
      return false;
    }
  };
  const cases: [string, string, (n: number) => string][] = [
    ['workers', 'ROUTER_WORKERS', String],
    ['drain.delaySeconds', 'ROUTER_DRAIN_DELAY', (n) => `${n}s`],
    ['accessLog.bufferBytes', 'ACCESS_LOG_BUFFER_BYTES', String],
    ['redis.timeout', 'RATE_LIMIT_REDIS_TIMEOUT', String],
    ['redis.recallWait', 'RATE_LIMIT_REDIS_RECALL_WAIT', String],
    ['tracing.samplerArg', 'OTEL_TRACES_SAMPLER_ARG', String],
  ];
  for (const [path, name, text] of cases) {
    const { minimum, maximum } = schemaAt(path);
    const step = path === 'tracing.samplerArg' ? 0.5 : 1;
    const env = (n: number): Record<string, string> => ({ [name]: text(n), ...(name.startsWith('OTEL') ? { OTEL_TRACES_SAMPLER: 'traceidratio' } : {}) });
    expect(starts(env(minimum)), `${path} ${minimum}`).toBe(true);
    expect(starts(env(minimum - step)), `${path} ${minimum - step}`).toBe(false);
    if (maximum !== undefined) {
      expect(starts(env(maximum)), `${path} ${maximum}`).toBe(true);
      expect(starts(env(maximum + step)), `${path} ${maximum + step}`).toBe(false);
    }
  }
  expect(schemaAt('redis.failureMode').enum).toEqual(['local', 'open', 'closed']);
  expect(schemaAt('accessLog.format').enum).toEqual(['json', 'text']);
});

test('the schema\'s gateway is ROUTER_GATEWAY as the router reads it: the values it takes, it takes; the others, it refuses', () => {
  const node = schemaAt('gateway');
  const takes = (v: string): boolean => node.allOf.every((p: Doc) => new RegExp(p.pattern, 'u').test(v));
  const starts = (v: string): boolean => {
    try {
      parseSettings(['--resources', 'r.yaml'], { ROUTER_GATEWAY: v });
      return true;
    } catch {
      return false;
    }
  };
  for (const v of ['', 'kthena-system/default', 'default/kthena-gateway-8081', 'a/b.c-d', `${'n'.repeat(63)}/${'g'.repeat(253)}`, `n/${'g.'.repeat(126)}g`,
    'default', '/gw', 'default/', 'a/b/c', 'Default/gw', 'default/GW', ' a/b', 'a/b ', 'de.fault/gw', 'default/-gw', 'default/gw.', 'default/g..w',
    `${'n'.repeat(64)}/gw`, `default/${'g'.repeat(254)}`, `n/${'g.'.repeat(127)}g`]) {
    expect(takes(v), JSON.stringify(v)).toBe(starts(v));
  }
  expect(VALUES.gateway).toBe('');
});

test('the chart keeps copies of deploy/crds and deploy/observability/alerts.yaml that are equal to them', () => {
  for (const f of ['modelroutes.yaml', 'modelservers.yaml']) {
    expect(readFileSync(join(CHART, 'files/crds', f), 'utf8'), f).toBe(readFileSync(join(ROOT, 'deploy/crds', f), 'utf8'));
  }
  expect(readFileSync(join(CHART, 'files/alerts.yaml'), 'utf8')).toBe(readFileSync(join(ROOT, 'deploy/observability/alerts.yaml'), 'utf8'));
});

// Shown as a skipped test, with the reason, where helm cannot be had.
if (HELM === null) test.skip('helm chart: no helm binary (set HELM, or run .ci/install-helm.sh)', () => {});

describe.skipIf(HELM === null)('helm chart', () => {
  test('namespaced objects name the release namespace; the RBAC objects are named after it too, so two releases of one name do not share them', () => {
    // A Role and its binding live in the namespace watched (watchNamespace, `models` here).
    const elsewhere = new Set(['ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'Role', 'RoleBinding']);
    for (const d of render(['source=kubernetes', ...ALL_ON]).filter((x) => !elsewhere.has(x.kind))) expect(d.metadata.namespace, `${d.kind} ${d.metadata.name}`).toBe('ir');
    const docs = render(['source=kubernetes']);
    const other = execFileSync(HELM!, ['template', 'r1', CHART, '--namespace', 'team-b', '--set', 'source=kubernetes'], { encoding: 'utf8' });
    const names = (text: string): string[] => parseAllDocuments(text).map((d) => d.toJS() as Doc).filter((d) => d?.kind?.startsWith('ClusterRole')).map((d) => d.metadata.name);
    const here = docs.filter((d) => d.kind.startsWith('ClusterRole')).map((d) => d.metadata.name);
    expect(here).toEqual(['r1-inference-router-ir', 'r1-inference-router-ir']);
    expect(names(other)).toEqual(['r1-inference-router-team-b', 'r1-inference-router-team-b']);
    expect(docs.find((d) => d.kind === 'ClusterRoleBinding')!.roleRef.name).toBe('r1-inference-router-ir');
  });

  test('an edit of the resources file does not roll the pods (the router reloads it); an edit of configFiles does', () => {
    const checksum = (set: string[]): string => deployment(render(['source=file', ...set])).spec.template.metadata.annotations['checksum/config'];
    expect(checksum(['resourcesFile=a'])).toBe(checksum(['resourcesFile=b']));
    expect(checksum(['resourcesFile=a', 'configFiles.scheduler\\.yaml=x'])).not.toBe(checksum(['resourcesFile=a', 'configFiles.scheduler\\.yaml=y']));
  });

  test('refused at render time: extraEnv naming a variable the chart sets, autoscaling with min above max, a grace margin under 5 s', () => {
    expect(refusal(['extraEnv[0].name=ROUTER_WORKERS', 'extraEnv[0].value=4'])).toContain('extraEnv: ROUTER_WORKERS is set by the chart from its values');
    expect(refusal(['extraEnv[0].name=OTEL_TRACES_EXPORTER', 'extraEnv[0].value=otlp'])).toBe('');
    expect(refusal(['tracing.enabled=true', 'extraEnv[0].name=OTEL_TRACES_EXPORTER', 'extraEnv[0].value=otlp'])).toContain('extraEnv: OTEL_TRACES_EXPORTER is set by the chart');
    // Those the chart sets only with some values, only then.
    expect(refusal(['extraEnv[0].name=OTEL_SERVICE_NAME', 'extraEnv[0].value=a'])).toBe('');
    expect(refusal(['tracing.enabled=true', 'tracing.serviceName=b', 'extraEnv[0].name=OTEL_SERVICE_NAME', 'extraEnv[0].value=a'])).toContain('extraEnv: OTEL_SERVICE_NAME is set by the chart');
    expect(refusal(['redis.existingSecret=creds', 'extraEnv[0].name=REDIS_PASSWORD', 'extraEnv[0].value=x'])).toContain('extraEnv: REDIS_PASSWORD is set by the chart');
    expect(refusal(['autoscaling.enabled=true', 'autoscaling.minReplicas=5', 'autoscaling.maxReplicas=3'])).toContain('autoscaling: minReplicas (5) is above maxReplicas (3)');
    expect(refusal(['drain.graceMarginSeconds=4'])).toMatch(/graceMarginSeconds/);
    expect(refusal(['drain.graceMarginSeconds=5'])).toBe('');
  });

  test('sysctls go to the pod\'s securityContext', () => {
    const pod = deployment(render(['sysctls[0].name=net.ipv4.tcp_migrate_req', 'sysctls[0].value=1'])).spec.template.spec;
    expect(pod.securityContext.sysctls).toEqual([{ name: 'net.ipv4.tcp_migrate_req', value: '1' }]);
    expect(deployment(render()).spec.template.spec.securityContext.sysctls).toBeUndefined();
  });

  test('image.digest pins the image by content instead of the tag', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    expect(deployment(render([`image.digest=${digest}`, 'image.repository=reg/ir'])).spec.template.spec.containers[0].image).toBe(`reg/ir@${digest}`);
    expect(refusal(['image.digest=latest'])).toMatch(/digest/);
  });

  test('helm lint --strict passes with the default values and with every optional part on', () => {
    execFileSync(HELM!, ['lint', '--strict', CHART], { encoding: 'utf8' });
    execFileSync(HELM!, ['lint', '--strict', CHART, ...ALL_ON.flatMap((s) => ['--set', s])], { encoding: 'utf8' });
  });

  test('default values: Deployment, Service, ServiceAccount, cluster RBAC, PDB and the CRDs (kept on uninstall)', () => {
    const docs = render();
    expect(kinds(docs)).toEqual(['ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'CustomResourceDefinition',
      'Deployment', 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
    for (const crd of docs.filter((d) => d.kind === 'CustomResourceDefinition')) {
      expect(crd.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
      expect(crd.spec.group).toBe('networking.serving.volcano.sh');
    }
    const pod = deployment(docs).spec.template.spec;
    const c = pod.containers[0];
    expect(c.args).toEqual(['--kubernetes']);
    // One worker per requested CPU, as deploy/base and docs/deploy.md.
    expect(Number(c.resources.requests.cpu)).toBe(Number(env(docs).ROUTER_WORKERS));
    expect(env(docs)).not.toHaveProperty('ROUTER_GATEWAY'); // every route served
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect(c.livenessProbe.httpGet.path).toBe('/healthz');
    expect(pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution).toHaveLength(1);
  });

  test('preStop sleeps ROUTER_DRAIN_DELAY; the grace period covers the sleep, the router\'s own drain delay and the drain timeout', () => {
    // preStop sleep, then on SIGTERM the router serves ROUTER_DRAIN_DELAY more before it closes its
    // listener and gives in-flight requests up to ROUTER_DRAIN_TIMEOUT; then the margin.
    for (const [set, delay, grace] of [[[], 5, 5 + 5 + 30 + 10], [ALL_ON, 7, 7 + 7 + 60 + 10]] as const) {
      const docs = render([...set]);
      const c = deployment(docs).spec.template.spec.containers[0];
      expect(c.lifecycle.preStop.exec.command).toEqual(['sleep', String(delay)]);
      expect(env(docs).ROUTER_DRAIN_DELAY).toBe(`${delay}s`);
      expect(deployment(docs).spec.template.spec.terminationGracePeriodSeconds).toBe(grace);
    }
    const noSleep = deployment(render(['drain.preStopSleep=false'])).spec.template.spec;
    expect(noSleep.containers[0].lifecycle).toBeUndefined();
    expect(noSleep.terminationGracePeriodSeconds).toBe(5 + 30 + 10);
  });

  test('the grace period follows drain.timeout in every duration form the router takes; one it does not take is refused', () => {
    for (const [timeout, seconds] of [['90s', 90], ['2m', 120], ['1m30s', 90], ['2m30s', 150], ['1.5m', 90], ['500ms', 1], ['5000ms', 5],
      ['1m0.5s', 61], ['0.25h', 900], ['1500000us', 2], ['2\u00b5s', 1], ['2\u03bcs', 1], ['1ns', 1], ['0s1ms', 1]] as const) {
      const docs = render([`drain.timeout=${timeout}`]);
      expect(env(docs).ROUTER_DRAIN_TIMEOUT, timeout).toBe(timeout);
      expect(deployment(docs).spec.template.spec.terminationGracePeriodSeconds, timeout).toBe(5 + 5 + seconds + 10);
    }
    for (const bad of ['thirty', '1d', '-5s', '+5s', '1.5', '']) {
      expect(() => render([`drain.timeout=${bad}`]), bad).toThrow(/drain\.timeout: expected a duration/);
    }
  });

  test('drain.timeout 0 is refused at render time: the router refuses ROUTER_DRAIN_TIMEOUT=0 at start', () => {
    for (const zero of ['0', '0s', '0ms', '0h0m0s', '0.0s']) {
      expect(() => render([`drain.timeout=${zero}`]), zero).toThrow(/drain\.timeout: must be above 0 \(got "[^"]+"\); the router refuses ROUTER_DRAIN_TIMEOUT=0 at start/);
    }
  });

  test('a bare number for drain.timeout is refused: the router reads it as milliseconds, not the seconds it looks like here', () => {
    for (const bare of ['30', '5000']) {
      expect(() => render([`drain.timeout=${bare}`]), bare).toThrow(new RegExp(`drain\\.timeout: a bare number \\("${bare}"\\) is read by the router as milliseconds; write the unit`));
    }
  });

  test('every optional part on: HPA on CPU, ServiceMonitor, PrometheusRule, NetworkPolicy, auth and Redis secrets, namespaced RBAC', () => {
    const docs = render(ALL_ON);
    expect(kinds(docs)).toEqual(['ConfigMap', 'CustomResourceDefinition', 'CustomResourceDefinition', 'Deployment',
      'HorizontalPodAutoscaler', 'NetworkPolicy', 'PodDisruptionBudget', 'PrometheusRule', 'Role', 'RoleBinding', 'Secret',
      'Service', 'ServiceAccount', 'ServiceMonitor']);
    const hpa = docs.find((d) => d.kind === 'HorizontalPodAutoscaler')!;
    expect(hpa.spec.metrics[0].resource.name).toBe('cpu');
    expect(deployment(docs).spec.replicas).toBeUndefined();
    // Prometheus's target labels win (pod: the router's own); series about a backend pod name it in backend_pod.
    expect(docs.find((d) => d.kind === 'ServiceMonitor')!.spec.endpoints[0].honorLabels).toBe(false);
    const rule = docs.find((d) => d.kind === 'PrometheusRule')!;
    expect(rule.spec.groups[0].rules.map((r: Doc) => r.alert)).toContain('InferenceRouterRedisFailureModeActive');
    const e = env(docs);
    expect(e.ROUTER_AUTH_CONFIG).toBe('/etc/inference-router/auth/auth.yaml');
    expect(e.REDIS_PASSWORD).toEqual({ secretKeyRef: { name: 'redis-auth', key: 'REDIS_PASSWORD' } });
    expect(e.REDIS_TLS_CA_FILE).toBe('/etc/inference-router/redis-ca/ca.crt');
    expect(e.RATE_LIMIT_REDIS_LEASES).toBe('false');
    expect(e.RATE_LIMIT_REDIS_RECALL_WAIT).toBe('2s');
    expect(e.ROUTER_NAMESPACE).toBe('models');
    expect(e.ROUTER_GATEWAY).toBe('kthena-system/default');
    const np = docs.find((d) => d.kind === 'NetworkPolicy')!;
    expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(docs.find((d) => d.kind === 'Role')!.metadata.namespace).toBe('models');
  });

  test('NetworkPolicy: with ingressFrom set, Prometheus (metricsFrom) keeps a rule of its own on the same port; without it, one rule for all', () => {
    const np = (set: string[]): Doc => render(['networkPolicy.enabled=true', ...set]).find((d) => d.kind === 'NetworkPolicy')!;
    expect(np([]).spec.ingress).toEqual([{ ports: [{ port: 'http', protocol: 'TCP' }] }]);
    const gateway = { podSelector: { matchLabels: { app: 'gw' } } };
    const [traffic, metrics] = np(['networkPolicy.ingressFrom[0].podSelector.matchLabels.app=gw']).spec.ingress;
    expect(traffic).toEqual({ ports: [{ port: 'http', protocol: 'TCP' }], from: [gateway] });
    // /metrics is on the traffic port (the ServiceMonitor scrapes port http): the same port, its own peers.
    expect(docsServiceMonitorPort()).toBe('http');
    expect(metrics).toEqual({ ports: [{ port: 'http', protocol: 'TCP' }],
      from: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } }] });
    const monitoring = np(['networkPolicy.ingressFrom[0].podSelector.matchLabels.app=gw',
      'networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring']).spec.ingress[1];
    expect(monitoring.from).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }]);
    expect(np(['networkPolicy.ingressFrom[0].podSelector.matchLabels.app=gw', 'networkPolicy.metricsFrom=null']).spec.ingress).toEqual([traffic]);
  });

  test('NetworkPolicy egress: the API rule to any address unless kubeApiCIDRs names it; extraEgress added as given', () => {
    const egress = (set: string[]): Doc[] =>
      render(['networkPolicy.enabled=true', 'networkPolicy.restrictEgress=true', ...set]).find((d) => d.kind === 'NetworkPolicy')!.spec.egress;
    const ports = (rule: Doc): number[] => rule.ports.map((p: Doc) => p.port);
    const open = egress([]);
    expect(open).toHaveLength(2);
    expect(ports(open[1])).toEqual([443, 6443, 6379, 8000, 8080]);
    expect(open[1].to).toBeUndefined();
    const narrowed = egress(['networkPolicy.kubeApiCIDRs={10.0.0.10/32,10.0.0.11/32}']);
    expect(narrowed[1]).toEqual({ ports: [{ port: 443, protocol: 'TCP' }, { port: 6443, protocol: 'TCP' }],
      to: [{ ipBlock: { cidr: '10.0.0.10/32' } }, { ipBlock: { cidr: '10.0.0.11/32' } }] });
    expect(ports(narrowed[2])).toEqual([6379, 8000, 8080]);
    expect(narrowed[2].to).toBeUndefined();
    // No API server to reach with source=file: neither rule has its ports.
    const file = egress(['source=file', 'resourcesFile=kind: ModelRoute', 'crds.install=false', 'networkPolicy.kubeApiCIDRs={10.0.0.10/32}']);
    expect(file.flatMap(ports)).toEqual([53, 53, 6379, 8000, 8080]);
    const extra = egress(['networkPolicy.extraEgress[0].ports[0].port=443', 'networkPolicy.extraEgress[0].to[0].ipBlock.cidr=203.0.113.7/32',
      'networkPolicy.extraEgress[1].ports[0].port=7000', 'networkPolicy.extraEgress[1].ports[0].endPort=7005']);
    expect(extra.slice(2)).toEqual([{ ports: [{ port: 443 }], to: [{ ipBlock: { cidr: '203.0.113.7/32' } }] }, { ports: [{ port: 7000, endPort: 7005 }] }]);
  });

  test('tracing: the OTEL_* variables the router reads, each only when set; egress to the endpoint\'s port', () => {
    expect(Object.keys(env(render())).filter((n) => n.startsWith('OTEL_'))).toEqual([]);
    expect(Object.keys(env(render(['tracing.endpoint=http://c:4318']))).filter((n) => n.startsWith('OTEL_'))).toEqual([]);
    const on = env(render(['tracing.enabled=true']));
    expect(Object.keys(on).filter((n) => n.startsWith('OTEL_'))).toEqual(['OTEL_TRACES_EXPORTER']);
    expect(on.OTEL_TRACES_EXPORTER).toBe('otlp');
    const all = env(render(['tracing.enabled=true', 'tracing.endpoint=http://otel-collector.observability:4318', 'tracing.serviceName=ir-prod',
      'tracing.resourceAttributes=deployment.environment=prod', 'tracing.sampler=parentbased_traceidratio', 'tracing.samplerArg=0.25', 'tracing.headersSecret=otel-auth',
      'tracing.compression=gzip']));
    expect(all).toMatchObject({
      OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318', OTEL_SERVICE_NAME: 'ir-prod',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_EXPORTER_OTLP_HEADERS: { secretKeyRef: { name: 'otel-auth', key: 'OTEL_EXPORTER_OTLP_HEADERS' } },
      OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip',
    });
    expect(env(render(['tracing.enabled=true', 'tracing.samplerArg=0'])).OTEL_TRACES_SAMPLER_ARG).toBe('0');
    const egressPorts = (set: string[]): number[] => render(['networkPolicy.enabled=true', 'networkPolicy.restrictEgress=true', ...set])
      .find((d) => d.kind === 'NetworkPolicy')!.spec.egress[1].ports.map((p: Doc) => p.port);
    const base = [443, 6443, 6379, 8000, 8080];
    expect(egressPorts(['tracing.endpoint=http://c:4318'])).toEqual(base);
    expect(egressPorts(['tracing.enabled=true'])).toEqual(base); // http://localhost:4318, in the pod
    for (const [endpoint, port] of [['http://c.observability:4318', 4318], ['http://c', 80], ['https://otel.example/base', 443], ['https://[fd00::1]:4317', 4317]] as const) {
      expect(egressPorts(['tracing.enabled=true', `tracing.endpoint=${endpoint}`]), endpoint).toEqual([...base, port]);
    }
  });

  test('the schema refuses values the router (or the chart) would not run with, naming the value', () => {
    // helm 4 names the value as /a/b, helm 3 as a.b.
    const at = (path: string): RegExp => new RegExp(`values don't meet the specifications of the schema[\\s\\S]*${path.replace(/\./g, '[./]')}`);
    for (const [set, path] of [
      ['accessLog.bufferBytes=16Mi', 'accessLog.bufferBytes'], // rendered as 0 by | int64; the router refuses < 65536
      ['accessLog.bufferBytes=1000', 'accessLog.bufferBytes'],
      ['workers=0', 'workers'], ['workers=257', 'workers'], ['workers=two', 'workers'],
      ['drain.delaySeconds=601', 'drain.delaySeconds'], ['drain.delaySeconds=-1', 'drain.delaySeconds'],
      ['podAntiAffinity=Hard', 'podAntiAffinity'], // fell back to soft, silently
      ['redis.failureMode=lax', 'redis.failureMode'], ['redis.timeout=61000', 'redis.timeout'], ['redis.timeout=fast', 'redis.timeout'],
      ['redis.recallWait=3000', 'redis.recallWait'], ['redis.port=0', 'redis.port'],
      ['accessLog.format=xml', 'accessLog.format'], ['source=crd', 'source'], ['apiGroup=Serving_Example', 'apiGroup'],
      ['tracing.sampler=sometimes', 'tracing.sampler'], ['tracing.samplerArg=1.5', 'tracing.samplerArg'],
      ['tracing.endpoint=otel:4318', 'tracing.endpoint'], ['tracing.endpoint=http://u:p@otel:4318', 'tracing.endpoint'],
      ['networkPolicy.kubeApiPorts={443,70000}', 'networkPolicy.kubeApiPorts'], ['networkPolicy.ingressFrom[0].podSelectr.app=gw', 'networkPolicy.ingressFrom'],
      ['workerz=2', ''], ['drain.delay=5', 'drain'],
      ['gateway=kthena-gateway-8081', 'gateway'], ['gateway=Default/gw', 'gateway'], [`gateway=default/${'g'.repeat(254)}`, 'gateway'],
    ] as const) {
      expect(refusal([set]), set).toMatch(at(path));
    }
  });

  test('where the schema is skipped, the templates refuse the same values instead of coercing them', () => {
    const skip = ['--skip-schema-validation'];
    expect(refusal(['accessLog.bufferBytes=16Mi'], skip)).toMatch(/accessLog\.bufferBytes: expected a whole number of at least 65536 \(ACCESS_LOG_BUFFER_BYTES, in bytes\), got "16Mi"/);
    expect(refusal(['workers=0'], skip)).toMatch(/workers: expected a whole number from 1 to 256 \(ROUTER_WORKERS\), got "0"/);
    expect(refusal(['workers=2.5'], skip)).toMatch(/workers: expected a whole number from 1 to 256/);
    expect(refusal(['drain.delaySeconds=601'], skip)).toMatch(/drain\.delaySeconds: expected a whole number from 0 to 600 \(ROUTER_DRAIN_DELAY, in seconds\), got "601"/);
    expect(refusal(['podAntiAffinity=Hard'], skip)).toMatch(/podAntiAffinity: expected soft, hard or none \(lower case\), got "Hard"/);
    // The bounds themselves render.
    const e = env(render(['workers=256', 'accessLog.bufferBytes=65536', 'drain.delaySeconds=600']));
    expect([e.ROUTER_WORKERS, e.ACCESS_LOG_BUFFER_BYTES, e.ROUTER_DRAIN_DELAY]).toEqual(['256', '65536', '600s']);
    const hard = deployment(render(['podAntiAffinity=hard'])).spec.template.spec.affinity.podAntiAffinity;
    expect(hard.requiredDuringSchedulingIgnoredDuringExecution).toHaveLength(1);
  });

  test('the router listens on listenHost (ROUTER_HOST): :: by default, so pods on IPv6-only clusters are reached; an empty one is refused', () => {
    expect(env(render()).ROUTER_HOST).toBe('::');
    expect(env(render(['listenHost=0.0.0.0'])).ROUTER_HOST).toBe('0.0.0.0');
    // Empty, the router would take its own default, 0.0.0.0, unnoticed.
    expect(() => render(['listenHost='])).toThrow(/listenHost/);
  });

  test('serviceAccount.create=false needs a name with source=kubernetes: the role is never bound to the namespace\'s default account', () => {
    for (const ns of [[], ['watchNamespace=models']]) {
      expect(() => render(['serviceAccount.create=false', ...ns])).toThrow(/serviceAccount\.name: with serviceAccount\.create=false, name the ServiceAccount the router runs as; .*"default" ServiceAccount/);
    }
    const named = render(['serviceAccount.create=false', 'serviceAccount.name=router-sa']);
    expect(kinds(named)).not.toContain('ServiceAccount');
    expect(deployment(named).spec.template.spec.serviceAccountName).toBe('router-sa');
    expect(named.find((d) => d.kind === 'ClusterRoleBinding')!.subjects).toEqual([{ kind: 'ServiceAccount', name: 'router-sa', namespace: 'ir' }]);
    // source=file: no role, no token mounted; the namespace's default account is harmless.
    const file = render(['serviceAccount.create=false', 'source=file', 'resourcesFile=kind: ModelRoute', 'crds.install=false']);
    expect(kinds(file)).toEqual(['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service']);
    expect(deployment(file).spec.template.spec).toMatchObject({ serviceAccountName: 'default', automountServiceAccountToken: false });
  });

  test('crds.install=false renders no CRD (clusters that already have the API group)', () => {
    expect(kinds(render(['crds.install=false']))).not.toContain('CustomResourceDefinition');
  });

  test('CRDs for another API group than apiGroup are refused', () => {
    expect(() => render(['apiGroup=serving.example.com'])).toThrow(/crds.install=false/);
  });

  test('source=file mounts the resources file from a ConfigMap and needs no RBAC', () => {
    const docs = render(['source=file', 'resourcesFile=kind: ModelRoute', 'crds.install=false']);
    expect(kinds(docs)).toEqual(['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
    expect(deployment(docs).spec.template.spec.containers[0].args).toEqual(['--resources', '/etc/inference-router/resources/resources.yaml']);
  });
});

test.skipIf(HELM === null)('tracing.caSecret and tracing.clientCertSecret: the exporter\'s CA and client pair mounted from Secrets and named in the OTLP variables; refused for a plain endpoint', () => {
  const docs = render(['tracing.enabled=true', 'tracing.endpoint=https://otel-collector.observability:4318', 'tracing.caSecret=otel-ca', 'tracing.clientCertSecret=router-otel-client']);
  expect(env(docs)).toMatchObject({
    OTEL_EXPORTER_OTLP_CERTIFICATE: '/etc/inference-router/otlp-ca/ca.crt',
    OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: '/etc/inference-router/otlp-client/tls.crt',
    OTEL_EXPORTER_OTLP_CLIENT_KEY: '/etc/inference-router/otlp-client/tls.key',
  });
  const pod = deployment(docs).spec.template.spec;
  expect(pod.containers[0].volumeMounts).toEqual(expect.arrayContaining([
    { name: 'otlp-ca', mountPath: '/etc/inference-router/otlp-ca', readOnly: true },
    { name: 'otlp-client', mountPath: '/etc/inference-router/otlp-client', readOnly: true },
  ]));
  expect(pod.volumes).toEqual(expect.arrayContaining([
    { name: 'otlp-ca', secret: { secretName: 'otel-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
    { name: 'otlp-client', secret: { secretName: 'router-otel-client', items: [{ key: 'tls.crt', path: 'tls.crt' }, { key: 'tls.key', path: 'tls.key' }] } },
  ]));
  // The CA alone: no client pair.
  const caOnly = env(render(['tracing.enabled=true', 'tracing.endpoint=https://c:4318', 'tracing.caSecret=otel-ca']));
  expect(Object.keys(caOnly).filter((n) => n.startsWith('OTEL_EXPORTER_OTLP_C'))).toEqual(['OTEL_EXPORTER_OTLP_CERTIFICATE']);
  // Tracing off: nothing mounted, nothing set.
  const off = render(['tracing.caSecret=otel-ca', 'tracing.clientCertSecret=router-otel-client']);
  expect(Object.keys(env(off)).filter((n) => n.startsWith('OTEL_'))).toEqual([]);
  expect(deployment(off).spec.template.spec.volumes.map((v: Doc) => v.name)).not.toContain('otlp-ca');
  for (const endpoint of ['http://c:4318', '']) {
    expect(refusal(['tracing.enabled=true', `tracing.endpoint=${endpoint}`, 'tracing.clientCertSecret=router-otel-client']), endpoint)
      .toContain(`tracing.caSecret and tracing.clientCertSecret need an https:// tracing.endpoint (got "${endpoint}")`);
  }
});

test.skipIf(HELM === null)('tls.secretName: the router serves HTTPS with the Secret\'s tls.crt and tls.key; probes and the ServiceMonitor use HTTPS', () => {
  const docs = render(['tls.secretName=router-tls', 'serviceMonitor.enabled=true']);
  expect(env(docs)).toMatchObject({ ROUTER_TLS_CERT_FILE: '/etc/inference-router/tls/tls.crt', ROUTER_TLS_KEY_FILE: '/etc/inference-router/tls/tls.key' });
  const pod = deployment(docs).spec.template.spec;
  const c = pod.containers[0];
  expect(c.volumeMounts).toContainEqual({ name: 'tls', mountPath: '/etc/inference-router/tls', readOnly: true });
  expect(pod.volumes).toContainEqual({ name: 'tls', secret: { secretName: 'router-tls', items: [{ key: 'tls.crt', path: 'tls.crt' }, { key: 'tls.key', path: 'tls.key' }] } });
  for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) expect(c[probe].httpGet.scheme, probe).toBe('HTTPS');
  const endpoint = docs.find((d) => d.kind === 'ServiceMonitor')!.spec.endpoints[0];
  expect([endpoint.scheme, endpoint.tlsConfig]).toEqual(['https', { insecureSkipVerify: true }]);
  const withCa = render(['tls.secretName=router-tls', 'serviceMonitor.enabled=true', 'serviceMonitor.tlsConfig.ca.secret.name=router-ca', 'serviceMonitor.tlsConfig.ca.secret.key=ca.crt', 'serviceMonitor.tlsConfig.serverName=router.example']);
  expect(withCa.find((d) => d.kind === 'ServiceMonitor')!.spec.endpoints[0].tlsConfig).toEqual({ ca: { secret: { name: 'router-ca', key: 'ca.crt' } }, serverName: 'router.example' });
  // What the chart sets, the router reads (as its settings parse them; the files themselves are the Secret's).
  const plain = render(['serviceMonitor.enabled=true']);
  expect(env(plain).ROUTER_TLS_CERT_FILE).toBeUndefined();
  expect(deployment(plain).spec.template.spec.containers[0].readinessProbe.httpGet.scheme).toBeUndefined();
  expect(docs.find((d) => d.kind === 'ServiceMonitor')).toBeDefined();
  expect(plain.find((d) => d.kind === 'ServiceMonitor')!.spec.endpoints[0].scheme).toBeUndefined();
});

