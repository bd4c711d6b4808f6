/**
 * What the wire carries, as data: the parameters of each operation and the fields of its answer.
 * The SDK checks arguments with it, a test checks it against the service's OpenAPI document, and
 * the result types are derived from it, so the three cannot drift apart.
 */

export interface Param {
  readonly kind: 'text' | 'integer' | 'boolean';
  readonly required: boolean;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly maxLength?: number;
}

export const text = (maxLength?: number): Param => ({ kind: 'text', required: true, ...(maxLength === undefined ? {} : { maxLength }) });
export const boolean: Param = { kind: 'boolean', required: true };
export const integer = (minimum: number, maximum: number, required = true): Param => ({ kind: 'integer', required, minimum, maximum });
/** BucketId, FileKey: positive, and below 2^53. */
export const id: Param = integer(1, Number.MAX_SAFE_INTEGER);

export type Shape =
  | { readonly type: 'string' }
  | { readonly type: 'date-time' }
  | { readonly type: 'integer' }
  | { readonly type: 'boolean' }
  | { readonly type: 'array'; readonly items: Shape }
  | { readonly type: 'object'; readonly fields: Readonly<Record<string, Shape>> };

export const shape = {
  string: { type: 'string' },
  dateTime: { type: 'date-time' },
  integer: { type: 'integer' },
  boolean: { type: 'boolean' },
  array: <S extends Shape>(items: S) => ({ type: 'array', items }) as const,
  object: <F extends Record<string, Shape>>(fields: F) => ({ type: 'object', fields }) as const,
} as const;

/** The TypeScript type of a shape. */
export type Infer<S> = S extends { type: 'string' | 'date-time' }
  ? string
  : S extends { type: 'integer' }
    ? number
    : S extends { type: 'boolean' }
      ? boolean
      : S extends { type: 'array'; items: infer I }
        ? Infer<I>[]
        : S extends { type: 'object'; fields: infer F }
          ? { [K in keyof F]: Infer<F[K]> }
          : never;

/** The fields of a shape of type object, as a type. */
export type Fields<F extends Record<string, Shape>> = { [K in keyof F]: Infer<F[K]> };

export const bucketFields = {
  BucketId: shape.integer,
  BucketName: shape.string,
  OpenToRead: shape.boolean,
  OpenToUpload: shape.boolean,
  BelongingAppId: shape.string,
  FileCount: shape.integer,
} as const;

export const fileShape = shape.object({
  FileKey: shape.integer,
  RealFileName: shape.string,
  FileExtension: shape.string,
  JFileSize: shape.integer,
  DownloadTimes: shape.integer,
  BucketId: shape.integer,
  UploadTime: shape.dateTime,
  AliveDays: shape.integer,
  InternetPath: shape.string,
});

export const bucketShape = shape.object(bucketFields);
