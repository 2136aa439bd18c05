import { describe, expect, it } from 'vitest';
import { missingKubeConfig, SERVICE_ACCOUNT_TOKEN } from '../../../src/config/kubernetes-config-check.js';

const none = (): boolean => false;

describe('missingKubeConfig', () => {
  it('nothing to say when KUBECONFIG is set, when ~/.kube/config exists, or in a pod with a service-account token', () => {
    expect(missingKubeConfig({ env: { KUBECONFIG: '/etc/kube/router.yaml' }, home: '/home/u', exists: none })).toBeNull();
    expect(missingKubeConfig({ env: {}, home: '/home/u', exists: (p) => p === '/home/u/.kube/config' })).toBeNull();
    expect(missingKubeConfig({ env: {}, home: null, exists: (p) => p === SERVICE_ACCOUNT_TOKEN })).toBeNull();
  });

  it('with none of them, names the three places it looked', () => {
    const m = missingKubeConfig({ env: { KUBECONFIG: '' }, home: '/home/u', exists: none });
    expect(m).toContain('KUBECONFIG is not set');
    expect(m).toContain('/home/u/.kube/config does not exist');
    expect(m).toContain(SERVICE_ACCOUNT_TOKEN);
    expect(missingKubeConfig({ env: {}, home: null, exists: none })).toContain('no home directory');
  });
});
