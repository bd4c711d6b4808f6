/**
 * Baseline: the request-handling limit of Fastify on this machine: one route answering a small
 * JSON object, no logging, no plugins.
 *
 * Run as a child process by the bench: prints {"port":N} once it listens.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false, keepAliveTimeout: 72_000 });
app.get('/', async () => ({ hello: 'world' }));

const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ port: Number(new URL(address).port) })}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
