// Debian's nginx (installed by test/editor/setup.sh) as the reverse proxy of a test: TLS terminated by
// nginx with the test's certificate, requests passed to the runtime on loopback with the headers the
// README's deployment recipe sets. `nginxUnavailable()` says why a test cannot run it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => fs.existsSync(p));

export function nginxUnavailable(): string | undefined {
  return NGINX ? undefined : 'nginx is not installed (Debian package nginx-light; bash test/editor/setup.sh installs it)';
}

export interface RunningNginx {
  port: number;
  /** Its error log so far. */
  errors(): string;
  close(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (free when asked; nginx takes it right after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The server block of the README's recipe, with the test's port, name, certificate and upstream; the
 * forwarded host is `$http_host` (with its port: the test's nginx is not on 443).
 */
export function proxyServerBlock(o: { port: number; name: string; certFile: string; keyFile: string; upstream: string }): string {
  return `
    server {
        listen 127.0.0.1:${o.port} ssl;
        server_name ${o.name};
        ssl_certificate ${o.certFile};
        ssl_certificate_key ${o.keyFile};
        client_max_body_size 16m;
        location / {
            proxy_pass ${o.upstream};
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-Host $http_host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_read_timeout 1h;
            proxy_buffering off;
        }
    }`;
}

export async function startNginx(block: (port: number) => string): Promise<RunningNginx> {
  if (!NGINX) throw new Error(nginxUnavailable());
  const prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'asl-nginx-'));
  const port = await freePort();
  const temp = (name: string) => `${name}_temp_path ${path.join(prefix, name)};`;
  fs.writeFileSync(path.join(prefix, 'nginx.conf'), `
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
pid ${path.join(prefix, 'nginx.pid')};
error_log ${path.join(prefix, 'error.log')} warn;
events { worker_connections 256; }
http {
    access_log off;
    ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join('\n    ')}
    map $http_upgrade $connection_upgrade { default upgrade; '' close; }
${block(port)}
}
`);
  const child: ChildProcess = spawn(NGINX, ['-p', prefix, '-c', path.join(prefix, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => { stderr += d; });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const errors = () => stderr + (fs.existsSync(path.join(prefix, 'error.log')) ? fs.readFileSync(path.join(prefix, 'error.log'), 'utf8') : '');
  const deadline = Date.now() + 15_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not start: ${errors()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    port,
    errors,
    async close() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      fs.rmSync(prefix, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}
