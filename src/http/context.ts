import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../services/context.js';

/** The services' view of a request: the instance's database and store, and the request's logger. */
export function contextOf(request: FastifyRequest): ServiceContext {
  return { db: request.server.db, storage: request.server.storage, resumable: request.server.resumable.resumable, log: request.log };
}
