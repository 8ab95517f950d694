// The S3 back end (MEDIA_STORE=s3://<bucket>[/<prefix>]): any S3-compatible object store through the
// AWS SDK v3, configured its standard way: AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL) for a store other
// than AWS, AWS_REGION, and the default credential chain (environment, profile, web identity, instance
// role). With an endpoint set, buckets are addressed by path (`<endpoint>/<bucket>/<key>`), which every
// S3-compatible server answers; AWS itself is addressed by virtual host.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type { MediaStoreLocation } from '../common/config.js';
import { fileStream, type ObjectBackend, type PutInfo } from './backend.js';

/** Above this a file is uploaded in parts, each streamed from its byte range of the spooled file. */
const multipartThreshold = 16 * 1024 * 1024;
const partSize = 8 * 1024 * 1024;

const statusOf = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;

function isMissing(err: unknown): boolean {
  return err instanceof NotFound || err instanceof NoSuchKey || statusOf(err) === 404;
}

/**
 * Signs a PutObject with the payload hash the writer computed (the object's SHA-256 is its key), instead of
 * the SDK hashing the body again to sign it.
 */
function withKnownHash(command: PutObjectCommand, { sha256 }: PutInfo): PutObjectCommand {
  if (!sha256) return command;
  command.middlewareStack.add(
    (next) => (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers) request.headers['x-amz-content-sha256'] = sha256;
      return next(args);
    },
    { step: 'build', name: 'albumflowKnownPayloadHash' },
  );
  return command;
}

export function s3Backend(location: MediaStoreLocation, env: NodeJS.ProcessEnv = process.env): ObjectBackend {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  // The credential chain reads the process's environment; keys given in `env` (another process's) are that chain's first step.
  const keys =
    env !== process.env && env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY } }
      : {};
  const client = new S3Client({
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}),
    ...keys,
    // A store that is down must not hold a download or a page for minutes: the attempt fails, and is retried.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    maxAttempts: 2,
  });
  const { bucket } = location;
  const keyOf = (key: string) => (location.prefix ? `${location.prefix}/${key}` : key);
  /** An object's key and type, as a put of it is made. */
  const objectParams = (key: string, { contentType }: PutInfo) => ({
    Bucket: bucket,
    Key: keyOf(key),
    ...(contentType ? { ContentType: contentType } : {}),
  });
  /**
   * One PutObject of `body` (the object's `info.bytes`); with the object's SHA-256 known, the store checks the
   * bytes against it and the SDK computes no checksum of its own.
   */
  const putObject = async (key: string, info: PutInfo, body: Buffer | Readable, condition: { IfNoneMatch?: '*' } = {}) => {
    const checksum = info.sha256 ? { ChecksumSHA256: Buffer.from(info.sha256, 'hex').toString('base64') } : {};
    await client.send(
      withKnownHash(
        new PutObjectCommand({ ...objectParams(key, info), ...checksum, ...condition, Body: body, ContentLength: info.bytes }),
        info,
      ),
    );
  };
  const head = async (key: string) => {
    try {
      const found = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(key) }));
      return { bytes: found.ContentLength ?? 0, contentType: found.ContentType ?? null };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  };
  /** False once the store answered a conditional write 501 Not Implemented: it is asked with a HEAD first from then on. */
  let conditionalWrites = true;

  return {
    description: `s3://${bucket}${location.prefix ? `/${location.prefix}` : ''}`,

    head,

    async read(key, range) {
      try {
        const object = await client.send(
          new GetObjectCommand({ Bucket: bucket, Key: keyOf(key), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
        );
        return object.Body as Readable;
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      }
    },

    movesFiles: false,

    /**
     * One conditional PutObject (`If-None-Match: *`, which S3 answers 412 when the key holds an object) instead
     * of a HEAD and a PUT. A store that ignores the condition writes the same bytes again under the same hash.
     */
    async putBytes(key, body, info) {
      const put = { ...info, bytes: body.length };
      if (conditionalWrites) {
        try {
          await putObject(key, put, body, { IfNoneMatch: '*' });
          return true;
        } catch (err) {
          if (statusOf(err) === 412) return false;
          if (statusOf(err) !== 501) throw err;
          conditionalWrites = false;
        }
      }
      if (await head(key)) return false;
      await putObject(key, put, body);
      return true;
    },

    async putFile(key, file, info) {
      const { bytes } = info;
      // One request, streamed from the file: nothing is buffered.
      if (bytes <= multipartThreshold) return putObject(key, info, fileStream(file));
      const params = objectParams(key, info);
      const { UploadId } = await client.send(new CreateMultipartUploadCommand(params));
      const upload = { Bucket: bucket, Key: params.Key, UploadId };
      try {
        const parts: Array<{ ETag: string | undefined; PartNumber: number }> = [];
        for (let start = 0, PartNumber = 1; start < bytes; start += partSize, PartNumber++) {
          const end = Math.min(start + partSize, bytes) - 1;
          const part = await client.send(
            new UploadPartCommand({ ...upload, PartNumber, Body: fileStream(file, { start, end }), ContentLength: end - start + 1 }),
          );
          parts.push({ ETag: part.ETag, PartNumber });
        }
        await client.send(new CompleteMultipartUploadCommand({ ...upload, MultipartUpload: { Parts: parts } }));
      } catch (err) {
        await client.send(new AbortMultipartUploadCommand(upload)).catch(() => undefined);
        throw err;
      }
    },

    async remove(key) {
      // Answers 204 for a key that is not there too.
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(key) }));
    },

    async removePrefix(prefix) {
      // Few objects share a prefix (an object's thumbnails): each is removed on its own, which every
      // S3-compatible server supports (DeleteObjects needs a Content-MD5 some servers refuse without).
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: keyOf(prefix), ContinuationToken: token }));
        for (const object of page.Contents ?? []) {
          if (object.Key) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: object.Key }));
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    },

    async ping() {
      await client.send(new HeadBucketCommand({ Bucket: bucket }));
    },

    close() {
      client.destroy();
    },
  };
}
