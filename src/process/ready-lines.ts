// The lines the ingress and the worker print on stdout once they serve, for whoever waits for them (a
// supervisor, the tests, the bench).

export const ingressReadyPrefix = 'albumflow ingress listening on';
export const workerReadyPrefix = 'albumflow worker polling';

export function ingressReadyLine(httpUrl: string | undefined, temporal: string): string {
  return `${ingressReadyPrefix} ${String(httpUrl)}, Temporal at ${temporal}\n`;
}

export function workerReadyLine(taskQueue: string, temporal: string, metricsUrl: string | undefined): string {
  return `${workerReadyPrefix} task queue "${taskQueue}" on ${temporal}; metrics at ${String(metricsUrl)}\n`;
}
