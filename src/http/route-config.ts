declare module 'fastify' {
  interface FastifyContextConfig {
    /** The /API operation a route serves, for logs and metrics. */
    operation?: string;
    /** /health, /ready and /metrics: orchestrators and scrapers must reach them whatever the state. */
    serviceEndpoint?: boolean;
    /** @fastify/under-pressure's per-route override; returning nothing lets the request through. */
    pressureHandler?: (request: FastifyRequest, reply: FastifyReply) => void;
    /** @fastify/cors's per-route switch: false keeps a route out of cross-origin access. */
    cors?: false;
    /** The route reads its body as a stream and asks for it (continueBody) once it will read it. */
    readsBodyItself?: boolean;
  }
}

/**
 * Route config of the service endpoints: no shutdown refusal, no load shedding, no rate limit; and
 * no CORS, since they serve orchestrators and scrapers, not browser apps.
 */
export const SERVICE_ENDPOINT = { serviceEndpoint: true, pressureHandler: () => {}, rateLimit: false, cors: false } as const;
