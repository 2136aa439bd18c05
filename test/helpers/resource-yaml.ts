/** Resource documents as YAML text, for the tests' and the bench's resources files. */

/**
 * A ModelRoute of `model` to ModelServer `server` (one rule, named default), `spec` lines after
 * its rules (a rateLimit, indented two spaces), as a document to append (it starts with `---`).
 */
export function modelRouteYaml(name: string, model: string, server: string, spec = ''): string {
  return `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: ${name}, namespace: default }
spec:
  modelName: ${model}
  rules:
    - name: default
      targetModels:
        - modelServerName: ${server}
${spec}`;
}

/** A ModelServer `name` with one endpoint, pod `pod` at 127.0.0.1:`port`, as a document to append (it starts with `---`). */
export function modelServerYaml(name: string, pod: string, port: number): string {
  return `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: ${name}, namespace: default }
spec:
  endpoints:
    - { name: ${pod}, address: "127.0.0.1:${port}" }
`;
}
