const API = 'networking.serving.volcano.sh/v1alpha1';

/** A pod of a pdGroup ModelServer in a resources file: its group and role as labels. */
export interface PdPod {
  name: string;
  port: number;
  group: string;
  role: string;
}

/** How the ModelServer declares its pairs: the engine, its kvConnector (none: the engine chooses), the label keys. */
export interface PdServerShape {
  engine: 'vLLM' | 'SGLang';
  connector: string | null;
  groupKey: string;
  roleKey: string;
}

/** The route API's own label keys, as kthena's manifests write them. */
export const KTHENA_LABELS = { groupKey: 'modelserving.volcano.sh/group-name', roleKey: 'modelserving.volcano.sh/role' } as const;

/**
 * A ModelServer with pdGroup whose pods are `pods` (each labelled with its group and role), and its
 * route serving `model`; `extra` goes into the server's spec before its endpoints.
 */
export function pdResources(name: string, model: string, shape: PdServerShape, pods: readonly PdPod[], extra = ''): string {
  const { groupKey, roleKey } = shape;
  return `apiVersion: ${API}
kind: ModelServer
metadata: { name: ${name}, namespace: default }
spec:
  model: served-${model}
  inferenceEngine: ${shape.engine}
${shape.connector === null ? '' : `  kvConnector: { type: ${shape.connector} }\n`}  workloadSelector:
    matchLabels: { app: ${name} }
    pdGroup:
      groupKey: ${groupKey}
      prefillLabels: { ${roleKey}: prefill }
      decodeLabels: { ${roleKey}: decode }
${extra}  endpoints:
${pods.map((p) => `    - { name: ${p.name}, address: "127.0.0.1:${p.port}", labels: { ${groupKey}: ${p.group}, ${roleKey}: ${p.role} } }`).join('\n')}
---
apiVersion: ${API}
kind: ModelRoute
metadata: { name: ${name}-route, namespace: default }
spec:
  modelName: ${model}
  rules:
    - targetModels:
        - modelServerName: ${name}
---
`;
}
