// Where Prometheus reads the metrics: `GET /metrics` on the runtime's own port behind admin credentials
// (and, like the Admin API, from loopback only unless --admin-remote), or on a port of its own
// (`--metrics-port`) that listens on 127.0.0.1 only and asks for none: whoever can reach it runs on this
// machine. Both check the Host like every runtime request, so a web page cannot read them through DNS
// rebinding.
import { ApiError } from '../http/errors';
import { FirstMatchRouter, Router } from '../http/router';
import { createHttpServer, type HttpRequest, type RunningHttpServer } from '../http/server';
import { logs, type Logger } from '../log';
import { healthRoutes, type ReadinessChecks } from './health';
import type { RuntimeMetrics } from './metrics';

export const METRICS_PATH = '/metrics';

/** Answers a scrape; `authorize` throws (an ApiError) when the request may not read the metrics. */
export function metricsRoutes(metrics: RuntimeMetrics, authorize?: (req: HttpRequest) => Promise<void>): Router {
  return new Router().get(METRICS_PATH, async (req) => {
    await authorize?.(req);
    return { text: await metrics.text(), contentType: metrics.contentType, headers: { 'Cache-Control': 'no-store' } };
  });
}

/** The main port's rule: loopback unless `allowRemote`, then admin credentials (see AdminAuth.authenticateScraper). */
export function scraperAuthorization(
  authenticate: (req: HttpRequest, gone: AbortSignal) => Promise<void>,
  allowRemote: boolean,
): (req: HttpRequest) => Promise<void> {
  return async (req) => {
    // `local`: a loopback client, not a request a proxy on this machine forwards for someone else.
    if (!allowRemote && !req.local) {
      throw new ApiError(403, 'Forbidden', 'metrics answer only requests from this machine (loopback) unless the runtime runs with --admin-remote');
    }
    // The response (not the kept-alive socket, which serves scrape after scrape) closes early only when the
    // client leaves: a Basic check waiting in the throttle's line is then dropped.
    const gone = new AbortController();
    req.response.once('close', () => gone.abort());
    await authenticate(req, gone.signal);
  };
}

/**
 * The `--metrics-port` server: `/metrics` without credentials, `/healthz` and `/readyz`, on 127.0.0.1 only.
 * Its requests are not logged one per line (a scraper every few seconds would drown the log); warnings and
 * errors are.
 */
export function startMetricsServer(options: { port: number; metrics: RuntimeMetrics; readiness: ReadinessChecks; log: Logger }): Promise<RunningHttpServer> {
  const { log } = options;
  const quiet: Logger = {
    info: () => undefined,
    warn: (message, fields) => log.warn(message, fields),
    error: (message, fields) => log.error(message, fields),
    enabled: (level) => level !== 'info' && level !== 'debug' && logs(log, level),
  };
  return createHttpServer({
    host: '127.0.0.1', port: options.port, log: quiet,
    router: new FirstMatchRouter([metricsRoutes(options.metrics), healthRoutes(options.readiness)]),
  });
}
