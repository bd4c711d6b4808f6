import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import rateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import authPlugin from '../plugins/auth.js';
import dbPlugin from '../plugins/db.js';
import docsPlugin from '../plugins/docs.js';
import downloadsPlugin from '../plugins/downloads.js';
import envelopePlugin, { routerErrorHandler } from '../plugins/envelope.js';
import jobsPlugin from '../plugins/jobs.js';
import metricsPlugin from '../plugins/metrics.js';
import protectionPlugin from '../plugins/protection.js';
import storagePlugin from '../plugins/storage.js';
import validationPlugin from '../plugins/validation.js';
import type { DatabaseHandle } from '../db/connect.js';
import type { Config } from './config.js';
import { failure } from './errors.js';
import { redactUrl } from './log-redaction.js';
import adminRoutes from './routes/admin.js';
import appRoutes from './routes/apps.js';
import bucketRoutes from './routes/buckets.js';
import downloadRoutes from './routes/downloads.js';
import fileRoutes from './routes/files.js';
import secretRoutes from './routes/secrets.js';
import serviceRoutes from './routes/service.js';
import tokenRoutes from './routes/tokens.js';
import uploadRoutes from './routes/upload.js';
import { DiskStore } from './storage/disk-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    /** Set when shutdown begins, so /ready can turn away new traffic at once. */
    lifecycle: { shuttingDown: boolean };
  }
}

export interface BuildOptions {
  config: Config;
  database: DatabaseHandle;
  /** Where log lines go (standard output when unset); tests read them to check redaction. */
  logStream?: Writable;
}

/** A load balancer's idle timeout is typically 60 s; keep connections open longer than that. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/**
 * How often Node checks headers timeouts (its default, 30 s, would let a slow client stay up to 30 s
 * past its deadline). Since Node 18 the check covers only requests in progress, so idle keep-alive
 * connections are not affected and headersTimeout need not exceed keepAliveTimeout.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

const CLIENT_ERROR_STATUS: Record<string, string> = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  // The headers did not arrive within HEADERS_TIMEOUT_SECONDS.
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
};

const CLIENT_ERROR_BODY = JSON.stringify({
  Code: -10,
  Message: 'Your input contains several errors!',
  Items: ['The HTTP request could not be read.'],
});

/** Builds the service without listening; the caller owns the database handle. */
export async function buildApp({ config, database, logStream }: BuildOptions): Promise<FastifyInstance> {
  const fastify = Fastify({
    logger: {
      level: config.logLevel,
      ...(logStream ? { stream: logStream } : {}),
      serializers: {
        // Query strings carry AccessTokens and secrets: they are redacted before any line is written.
        req: (request: FastifyRequest) => ({
          method: request.method,
          url: redactUrl(request.url),
          remoteAddress: request.ip,
        }),
      },
    },
    genReqId: () => randomUUID(),
    trustProxy: config.trustProxy,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // An idle timeout, reset by every byte either way: a stalled upload or reader is dropped, while a
    // long transfer that keeps moving is never cut (requestTimeout stays 0 for the same reason).
    connectionTimeout: config.idleTimeoutSeconds * 1000,
    http: {
      headersTimeout: config.headersTimeoutSeconds * 1000,
      requestTimeout: 0,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    routerOptions: { caseSensitive: false, maxParamLength: 2048, ignoreDuplicateSlashes: false },
    frameworkErrors: routerErrorHandler,
    // Requests arriving while closing get the envelope from the protection plugin instead.
    return503OnClosing: false,
    clientErrorHandler: (error, socket) => {
      if (socket.writable) {
        const status = CLIENT_ERROR_STATUS[(error as { code?: string }).code ?? ''] ?? '400 Bad Request';
        socket.end(
          `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
            `Content-Length: ${Buffer.byteLength(CLIENT_ERROR_BODY)}\r\n\r\n${CLIENT_ERROR_BODY}`,
        );
      } else {
        socket.destroy(error);
      }
    },
  });

  fastify.decorate('config', config);
  fastify.decorate('lifecycle', { shuttingDown: false });

  await fastify.register(envelopePlugin);
  await fastify.register(validationPlugin);
  await fastify.register(dbPlugin, { database });
  await fastify.register(storagePlugin, { storage: new DiskStore(config.storageDir) });
  await fastify.register(authPlugin);
  await fastify.register(metricsPlugin);
  await fastify.register(downloadsPlugin);
  await fastify.register(jobsPlugin);
  await fastify.register(rateLimit, {
    // Per client address on every route but the service endpoints; the token endpoint has its own.
    global: config.rateLimitPerMinute > 0,
    max: config.rateLimitPerMinute,
    timeWindow: 60_000,
    errorResponseBuilder: (_request, context) =>
      failure(`Too many requests; try again in ${Math.max(1, Math.ceil(context.ttl / 1000))} seconds.`, 429),
  });
  await fastify.register(protectionPlugin);
  await fastify.register(docsPlugin);

  await fastify.register(serviceRoutes);
  await fastify.register(tokenRoutes);
  await fastify.register(appRoutes);
  await fastify.register(bucketRoutes);
  await fastify.register(fileRoutes);
  await fastify.register(uploadRoutes);
  await fastify.register(downloadRoutes);
  await fastify.register(secretRoutes);
  if (config.adminKey) await fastify.register(adminRoutes, { adminKey: config.adminKey });

  return fastify;
}
