// Liveness and readiness for load balancers and orchestrators: `GET /healthz` answers while the process
// serves HTTP at all; `GET /readyz` only when it can do its work (apps loaded, stores open, function
// processes started) and is not stopping. Neither needs credentials, so neither says more than its
// checks' names and a word each: no app names, paths or error texts.
import { Router } from '../http/router';

export const HEALTH_PATH = '/healthz';
export const READY_PATH = '/readyz';

/** One check's outcome: `ok`, or a short fixed word saying what is not ready. */
export type CheckOutcome = 'ok' | 'starting' | 'failed' | 'closed' | 'none' | 'draining';

export interface ReadinessChecks {
  /** Outcomes by check name (`apps`, `store`, `functions`, `draining`). */
  (): Record<string, CheckOutcome>;
}

/** What `/readyz` answers: 200 when every check is ok, else 503 with the checks. */
export function readiness(checks: ReadinessChecks): { status: number; body: { status: 'ready' | 'not ready'; checks: Record<string, CheckOutcome> } } {
  const outcomes = checks();
  const ready = Object.values(outcomes).every((o) => o === 'ok');
  return { status: ready ? 200 : 503, body: { status: ready ? 'ready' : 'not ready', checks: outcomes } };
}

/**
 * The worst of several outcomes of one kind (each app's store, each app's function process): `failed`
 * over `closed` over `starting` over `ok`.
 */
export function worstOf(outcomes: readonly CheckOutcome[]): CheckOutcome {
  for (const bad of ['failed', 'closed', 'draining', 'starting', 'none'] as const) if (outcomes.includes(bad)) return bad;
  return 'ok';
}

/** The two routes; answers are never cached (a probe must see the present). */
export function healthRoutes(checks: ReadinessChecks): Router {
  const noStore = { 'Cache-Control': 'no-store' };
  return new Router()
    .get(HEALTH_PATH, () => ({ body: { status: 'ok' }, encoding: 'json', headers: noStore }))
    .get(READY_PATH, () => ({ ...readiness(checks), encoding: 'json', headers: noStore }));
}
