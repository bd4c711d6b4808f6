declare module 'fastify' {
  interface FastifyContextConfig {
    /** The /API operation a route serves, for logs and metrics. */
    operation?: string;
    /** /health, /ready and /metrics: orchestrators and scrapers must reach them whatever the state. */
    serviceEndpoint?: boolean;
    /** @fastify/under-pressure's per-route override; returning nothing lets the request through. */
    pressureHandler?: (request: FastifyRequest, reply: FastifyReply) => void;
  }
}

/** Route config of the service endpoints: no shutdown refusal, no load shedding, no rate limit. */
export const SERVICE_ENDPOINT = { serviceEndpoint: true, pressureHandler: () => {}, rateLimit: false } as const;
