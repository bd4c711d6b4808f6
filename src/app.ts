import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import admissionPlugin from '../plugins/admission.js';
import apiBindingPlugin from '../plugins/api-binding.js';
import corsPlugin from '../plugins/cors.js';
import dbPlugin from '../plugins/db.js';
import docsPlugin from '../plugins/docs.js';
import downloadCounterPlugin from '../plugins/download-counter.js';
import envelopePlugin from '../plugins/envelope.js';
import imagesPlugin from '../plugins/images.js';
import jobsPlugin from '../plugins/jobs.js';
import metricsPlugin from '../plugins/metrics.js';
import protectionPlugin from '../plugins/protection.js';
import rateLimitPlugin from '../plugins/rate-limit.js';
import resumablePlugin from '../plugins/resumable.js';
import storagePlugin from '../plugins/storage.js';
import unreadBodiesPlugin from '../plugins/unread-bodies.js';
import type { DatabaseHandle } from '../db/connect.js';
import type { Config } from './config.js';
import adminRoutes from './http/admin.js';
import appRoutes from './http/apps.js';
import bucketRoutes from './http/buckets.js';
import consoleRoutes, { defaultConsoleDir } from './http/console.js';
import downloadRoutes from './http/downloads.js';
import { handleClientError, handleRouterError } from './http/envelope.js';
import fileRoutes from './http/files.js';
import resumableUploadRoutes from './http/resumable-upload.js';
import { secretDownloadRoutes, secretGenerationRoutes } from './http/secrets.js';
import serviceRoutes from './http/service.js';
import tokenRoutes from './http/tokens.js';
import uploadRoutes from './http/upload.js';
import { redactUrl } from './log-redaction.js';
import { createBackend } from './storage/backends.js';

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
  /** The built web console (dist/console unless given); tests build it elsewhere. */
  consoleDir?: string;
}

/** A load balancer's idle timeout is typically 60 s; keep connections open longer than that. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/**
 * How often Node checks headers timeouts (its default, 30 s, would let a slow client stay up to 30 s
 * past its deadline). Since Node 18 the check covers only requests in progress, so idle keep-alive
 * connections are not affected and headersTimeout need not exceed keepAliveTimeout.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/** Builds the service without listening; the caller owns the database handle. */
export async function buildApp({ config, database, logStream, consoleDir }: BuildOptions): Promise<FastifyInstance> {
  const fastify = Fastify({
    logger: {
      level: config.logLevel,
      ...(logStream ? { stream: logStream } : {}),
      // Nothing logs request headers today; should a line ever carry them, the token stays out.
      redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[REDACTED]' },
      serializers: {
        // Query strings carry AccessTokens and secrets: they are redacted before any line is written.
        req: (request: FastifyRequest) => ({ method: request.method, url: redactUrl(request.url), remoteAddress: request.ip }),
      },
    },
    genReqId: () => randomUUID(),
    trustProxy: config.trustProxy,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // An idle timeout, reset by every byte either way: a stalled upload or reader is dropped, while a
    // long transfer that keeps moving is never cut (requestTimeout stays 0 for the same reason).
    connectionTimeout: config.idleTimeoutSeconds * 1000,
    http: { headersTimeout: config.headersTimeoutSeconds * 1000, requestTimeout: 0, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS },
    routerOptions: { caseSensitive: false, maxParamLength: 2048, ignoreDuplicateSlashes: false },
    frameworkErrors: handleRouterError,
    // Requests arriving while closing get the envelope from the protection plugin instead.
    return503OnClosing: false,
    clientErrorHandler: handleClientError,
  });

  fastify.decorate('config', config);
  fastify.decorate('lifecycle', { shuttingDown: false });

  await fastify.register(envelopePlugin);
  await fastify.register(unreadBodiesPlugin);
  await fastify.register(corsPlugin);
  await fastify.register(dbPlugin, { database });
  const backend = await createBackend(config);
  await fastify.register(storagePlugin, { storage: backend.blobs });
  await fastify.register(resumablePlugin, { bytes: backend.resumable });
  await fastify.register(downloadCounterPlugin);
  await fastify.register(metricsPlugin, { database });
  await fastify.register(admissionPlugin);
  await fastify.register(imagesPlugin);
  await fastify.register(jobsPlugin);
  await fastify.register(rateLimitPlugin);
  await fastify.register(protectionPlugin);
  await fastify.register(docsPlugin);

  await fastify.register(serviceRoutes);
  await fastify.register(downloadRoutes);
  await fastify.register(secretDownloadRoutes);
  // tus clients send their own headers and bodies: outside the context that binds form parameters.
  await fastify.register(resumableUploadRoutes);
  await fastify.register(consoleRoutes, { root: consoleDir ?? defaultConsoleDir() });
  if (config.adminKey) await fastify.register(adminRoutes, { adminKey: config.adminKey });
  // The contract's operations bind their parameters the way the original clients send them.
  await fastify.register(async (api) => {
    await api.register(apiBindingPlugin);
    await api.register(tokenRoutes);
    await api.register(appRoutes);
    await api.register(bucketRoutes);
    await api.register(fileRoutes);
    await api.register(uploadRoutes);
    await api.register(secretGenerationRoutes);
  });

  return fastify;
}
