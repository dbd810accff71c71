// `GET /`: a small page saying what this runtime serves (app name and id, the client API base, the GraphQL
// endpoint) with links, for a person who opens the URL `asl serve` printed. Every value is escaped and the
// page runs no script: its Content-Security-Policy allows nothing but its own inline style (by nonce).
import { randomBytes } from 'node:crypto';
import { ADMIN_API, CLIENT_API, CLIENT_ROUTES, routePath } from '../../core/apiRoutes';

export interface HomePageInfo {
  /** What clients use to reach this server, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** The apps served, each under its client app id. */
  apps: ReadonlyArray<{ name: string; appId: string }>;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function homePage(info: HomePageInfo): { text: string; contentType: string; headers: Record<string, string> } {
  const nonce = randomBytes(16).toString('base64');
  const title = info.apps.length === 1 ? info.apps[0]!.name : `${info.apps.length} apps`;
  const link = (url: string) => `<a href="${escapeHtml(url)}">${escapeHtml(url)}</a>`;
  const code = (text: string) => `<code>${escapeHtml(text)}</code>`;
  const row = (label: string, value: string) => `<tr><th>${escapeHtml(label)}</th><td>${value}</td></tr>`;
  const apps = info.apps.map(({ name, appId }) => {
    const app = `${info.baseUrl}${CLIENT_API}/app/${encodeURIComponent(appId)}`;
    return `<h2>${escapeHtml(name)}</h2>
<table>
${row('App id', code(appId))}
${row('App routes', code(app))}
${row('GraphQL endpoint (POST, bearer token)', code(`${info.baseUrl}${CLIENT_API}${routePath(CLIENT_ROUTES.graphql, { appId })}`))}
${row('Location', link(`${info.baseUrl}${CLIENT_API}${routePath(CLIENT_ROUTES.location, { appId })}`))}
</table>`;
  });
  const text = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} — App Services Local</title>
<style nonce="${nonce}">
body { font: 15px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 52rem; padding: 0 1rem; color: #1c2d38; }
th { text-align: left; padding-right: 1.5rem; font-weight: 600; vertical-align: top; }
td, th { padding-bottom: .4rem; }
code, a { font-family: ui-monospace, monospace; word-break: break-all; }
p { color: #5c6c75; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p>App Services Local is serving the client API of ${info.apps.length === 1 ? 'this app' : 'these apps'}. Point an SDK at the client API base URL with an app id below.</p>
<table>
${row('Client API base URL', link(info.baseUrl))}
${row('Admin API', code(`${info.baseUrl}${ADMIN_API}`))}
${row('Recent requests (JSON)', link(`${info.baseUrl}/logs`))}
</table>
${apps.join('\n')}
<p>Error responses link to <code>/logs?co_id=&lt;id&gt;</code>, the log entry of the failed request.</p>
</body>
</html>
`;
  return {
    text,
    contentType: 'text/html; charset=utf-8',
    headers: {
      'Content-Security-Policy': `default-src 'none'; style-src 'nonce-${nonce}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
    },
  };
}
