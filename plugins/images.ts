import fp from 'fastify-plugin';
import { configureSharp } from '../src/services/image-render.js';
import { ImageVariants } from '../src/services/image-variants.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Image variants of downloads; undefined when IMAGE_TRANSFORMATIONS is off. */
    images: ImageVariants | undefined;
  }
}

/** Image transformations on download: libvips set up from the configuration, once, and the variants' service. */
export default fp(
  async (fastify) => {
    const settings = fastify.config.images;
    if (!settings.enabled) {
      fastify.decorate('images', undefined);
      return;
    }
    configureSharp(settings);
    const { imageRenders: renders, imageVariantsServed: served } = fastify.metrics;
    const images = new ImageVariants({ db: fastify.db, storage: fastify.storage, log: fastify.log }, settings, { renders, served }, fastify.admission.images);
    fastify.decorate('images', images);
    // After the requests have finished: the last uses they made are written.
    fastify.addHook('onClose', async () => {
      await images.settled();
      await images.flushTouches().catch((error: unknown) => fastify.log.warn({ err: error }, 'image variants’ last uses were not written at shutdown'));
    });
  },
  { name: 'images', fastify: '5.x', dependencies: ['db', 'storage', 'metrics', 'admission'] },
);
