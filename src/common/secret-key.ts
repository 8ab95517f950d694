// The key that encrypts the secrets albumflow stores (signing secrets, bot tokens, LINE channel secrets
// and access tokens): AES-256-GCM under ALBUMFLOW_SECRET_KEY, or a key generated in DATA_DIR/secret-key.
import crypto from 'node:crypto';
import path from 'node:path';
import { createPrivateFileOnce, permissionWarning, readPrivateFile } from './private-file.js';

export class SecretKeyError extends Error {
  override name = 'SecretKeyError';
}

/** The file under DATA_DIR that holds the generated keys when ALBUMFLOW_SECRET_KEY is unset. */
export function secretKeyPath(dataDir: string): string {
  return path.join(dataDir, 'secret-key');
}

const keyBytes = 32;
const ivBytes = 12;
const tagBytes = 16;
const idBytes = 8;
const formatVersion = 1;

/** A key as text: 64 hex digits, or 32 bytes in base64 or base64url (`openssl rand -hex 32`). */
export function parseKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-f]{64}$/i.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)
      ? Buffer.from(trimmed, 'base64')
      : undefined;
  if (key === undefined || key.length !== keyBytes) {
    throw new SecretKeyError(`${where} must be 32 bytes as 64 hex digits or base64, such as the output of \`openssl rand -hex 32\``);
  }
  return key;
}

/** Several keys, separated by commas or line breaks: the first encrypts, every one decrypts (during a rekey). */
export function parseKeys(text: string, where: string): Buffer[] {
  const parts = text
    .split(/[,\n]/)
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (parts.length === 0) throw new SecretKeyError(`${where} holds no key`);
  return parts.map((part, index) => parseKey(part, parts.length === 1 ? where : `${where} (key #${index + 1})`));
}

export const generateKey = (): Buffer => crypto.randomBytes(keyBytes);
export const keyText = (key: Buffer): string => key.toString('hex');

/** The 8 bytes that name a key in what it sealed (the start of its SHA-256), so the right key is picked and a wrong one is named. */
function keyId(key: Buffer): Buffer {
  return crypto.createHash('sha256').update(key).digest().subarray(0, idBytes);
}

/**
 * Seals and opens stored secrets with AES-256-GCM: each sealed value is
 * `version (1) | key id (8) | IV (12) | tag (16) | ciphertext`, with `purpose` (what the value is and whose)
 * as additional data, so a value copied into another row or column does not open.
 */
export class KeyRing {
  readonly #keys: Array<{ key: Buffer; id: Buffer }>;
  readonly #reload: (() => Buffer[]) | undefined;

  /** `reload`: read the keys again when a value was sealed under a key this ring lacks (the key file, after a rekey). */
  constructor(keys: readonly Buffer[], reload?: () => Buffer[]) {
    if (keys.length === 0) throw new SecretKeyError('a key ring needs at least one key');
    this.#keys = keys.map((key) => ({ key, id: keyId(key) }));
    this.#reload = reload;
  }

  /** The first 16 hex digits of the current key's SHA-256: how the key is named without showing it. */
  get currentKeyId(): string {
    return this.#keys[0]!.id.toString('hex');
  }

  seal(plain: string, purpose: string): Buffer {
    const { key, id } = this.#keys[0]!;
    const iv = crypto.randomBytes(ivBytes);
    const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(purpose, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([formatVersion]), id, iv, cipher.getAuthTag(), ciphertext]);
  }

  /** Whether the value is sealed under the current key (a rekey leaves those alone). */
  isCurrent(sealed: Buffer): boolean {
    return sealed.subarray(1, 1 + idBytes).equals(this.#keys[0]!.id);
  }

  /** Opens `sealed` and seals it again under the current key; undefined when it is sealed under that key already. */
  reseal(sealed: Buffer, purpose: string): Buffer | undefined {
    return this.isCurrent(sealed) ? undefined : this.seal(this.open(sealed, purpose), purpose);
  }

  open(sealed: Buffer, purpose: string): string {
    if (sealed.length < 1 + idBytes + ivBytes + tagBytes || sealed[0] !== formatVersion) {
      throw new SecretKeyError(`a stored ${purpose} is not a value albumflow sealed`);
    }
    const id = sealed.subarray(1, 1 + idBytes);
    let entry = this.#keys.find((candidate) => candidate.id.equals(id));
    if (!entry && this.#reload) {
      // The file's keys in its order (its first seals from now on), then the ones it no longer lists, to open older values.
      const fresh = this.#reload().map((key) => ({ key, id: keyId(key) }));
      if (fresh.length > 0) {
        const kept = this.#keys.filter((known) => !fresh.some((candidate) => candidate.id.equals(known.id)));
        this.#keys.splice(0, this.#keys.length, ...fresh, ...kept);
      }
      entry = this.#keys.find((candidate) => candidate.id.equals(id));
    }
    if (!entry) {
      throw new SecretKeyError(
        `a stored ${purpose} is sealed under key ${id.toString('hex')}, which is not in ALBUMFLOW_SECRET_KEY (or DATA_DIR/secret-key)`,
      );
    }
    const ivStart = 1 + idBytes;
    const decipher = crypto.createDecipheriv('aes-256-gcm', entry.key, sealed.subarray(ivStart, ivStart + ivBytes));
    decipher.setAAD(Buffer.from(purpose, 'utf8'));
    decipher.setAuthTag(sealed.subarray(ivStart + ivBytes, ivStart + ivBytes + tagBytes));
    try {
      return Buffer.concat([decipher.update(sealed.subarray(ivStart + ivBytes + tagBytes)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretKeyError(
        `a stored ${purpose} does not open with key ${entry.id.toString('hex')}: it was altered or copied from elsewhere`,
      );
    }
  }
}

export interface SecretKeySource {
  ring: KeyRing;
  /** Where the keys come from: `ALBUMFLOW_SECRET_KEY`, or the key file. */
  source: string;
  /** The key file (when ALBUMFLOW_SECRET_KEY is unset). */
  file?: string;
  created: boolean;
  warning?: string;
}

/** The keys in the file, or undefined when there is no file. */
function readKeyFile(file: string): Buffer[] | undefined {
  const text = readPrivateFile(file, (reason) => new SecretKeyError(`cannot read the secret key in ${file}: ${reason}`));
  return text === undefined ? undefined : parseKeys(text, file);
}

/**
 * ALBUMFLOW_SECRET_KEY, else the keys of DATA_DIR/secret-key, generated (mode 0600) when there is none.
 * A ring from the file reads it again when it meets a value sealed under a key it lacks.
 */
export function resolveSecretKey(env: { secretKey: string | undefined; dataDir: string }): SecretKeySource {
  if (env.secretKey !== undefined) {
    return { ring: new KeyRing(parseKeys(env.secretKey, 'ALBUMFLOW_SECRET_KEY')), source: 'ALBUMFLOW_SECRET_KEY', created: false };
  }
  const file = secretKeyPath(env.dataDir);
  let keys = readKeyFile(file);
  let created = false;
  if (keys === undefined) {
    const generated = generateKey();
    createPrivateFileOnce(file, `${keyText(generated)}\n`);
    keys = readKeyFile(file);
    if (keys === undefined) throw new SecretKeyError(`${file} disappeared while it was being created`);
    created = keys[0]!.equals(generated);
  }
  const reload = () => readKeyFile(file) ?? [];
  return { ring: new KeyRing(keys, reload), source: file, file, created, ...permissionWarning(file) };
}
