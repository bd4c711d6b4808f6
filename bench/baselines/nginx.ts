/**
 * Baseline: nginx with `sendfile on`, serving the same files as the bare download server. Used only
 * where nginx is installed (the bench never installs it). One worker process, so that it compares
 * with the service's one Node.js process; access log off, keep-alive unlimited.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx', '/usr/bin/nginx'];

/** The nginx binary and its version, or undefined when nginx is not installed. */
export function findNginx(): { binary: string; version: string } | undefined {
  const fromPath = (process.env.PATH ?? '').split(':').map((dir) => path.join(dir, 'nginx'));
  const binary = [...fromPath, ...CANDIDATES].find((file) => existsSync(file));
  if (!binary) return undefined;
  // nginx -v prints to standard error.
  const result = spawnSync(binary, ['-v'], { encoding: 'utf8' });
  const version = /nginx version:\s*(\S+)/.exec(`${result.stderr}${result.stdout}`)?.[1];
  return version ? { binary, version } : undefined;
}

/** Writes a self-contained configuration under `prefix`; returns the arguments to start nginx with. */
export async function nginxConfig(prefix: string, root: string, port: number): Promise<string[]> {
  await mkdir(prefix, { recursive: true });
  const conf = path.join(prefix, 'nginx.conf');
  const temp = (name: string) => `${name} ${path.join(prefix, name.replace(/_path$/, ''))};`;
  await writeFile(
    conf,
    [
      'worker_processes 1;',
      'daemon off;',
      `pid ${path.join(prefix, 'nginx.pid')};`,
      `error_log ${path.join(prefix, 'error.log')} warn;`,
      // As root, workers would switch to nobody, who cannot enter the bench's private temp folder.
      ...(process.getuid?.() === 0 ? ['user root;'] : []),
      'events { worker_connections 4096; }',
      'http {',
      '  access_log off;',
      '  default_type application/octet-stream;',
      '  sendfile on;',
      '  tcp_nopush on;',
      '  keepalive_requests 1000000;',
      '  keepalive_timeout 75s;',
      `  ${temp('client_body_temp_path')}`,
      `  ${temp('proxy_temp_path')}`,
      `  ${temp('fastcgi_temp_path')}`,
      `  ${temp('uwsgi_temp_path')}`,
      `  ${temp('scgi_temp_path')}`,
      `  server { listen 127.0.0.1:${port}; root ${root}; location / { } }`,
      '}',
      '',
    ].join('\n'),
  );
  return ['-p', prefix, '-e', path.join(prefix, 'error.log'), '-c', conf];
}
