import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec, ValueError } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { PayloadKey } from '../config/payload-keys';

/** The encoding of an encrypted payload, as Temporal's samples and codec servers name it. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata naming the key a payload was encrypted under. */
export const KEY_ID_METADATA = 'encryption-key-id';
/** Metadata naming the cipher, so that another one can be introduced beside it later. */
const CIPHER_METADATA = 'encryption-cipher';
const CIPHER = 'AES-256-GCM';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Where the codec's keys come from. The keys of SETTLE_PAYLOAD_KEYS are one implementation
 * ({@link StaticKeySource}); a KMS is another: `encryptionKey` returns its current data key (cached,
 * the codec asks for every payload), `decryptionKey` the key of an ID, fetched once and remembered.
 */
export interface PayloadKeySource {
  /** The key new payloads are encrypted under. */
  encryptionKey(): PayloadKey | Promise<PayloadKey>;
  /** The key of this ID, or undefined when the source does not know it. */
  decryptionKey(id: string): PayloadKey | undefined | Promise<PayloadKey | undefined>;
}

/** The keys of SETTLE_PAYLOAD_KEYS (or its file): the first encrypts, all of them decrypt. */
export class StaticKeySource implements PayloadKeySource {
  private readonly byId: Map<string, PayloadKey>;

  constructor(private readonly keys: readonly PayloadKey[]) {
    if (keys.length === 0) throw new Error('a payload key source needs at least one key');
    this.byId = new Map(keys.map((key) => [key.id, key]));
  }

  encryptionKey(): PayloadKey {
    return this.keys[0]!;
  }

  decryptionKey(id: string): PayloadKey | undefined {
    return this.byId.get(id);
  }
}

/**
 * Encrypts every payload whole (its metadata and data, protobuf-encoded) with AES-256-GCM under a
 * fresh 12-byte nonce: `data` is nonce, ciphertext and tag; the metadata says only `binary/encrypted`,
 * the cipher and the key ID, which is also the cipher's additional data, so a payload cannot be passed
 * off under another key's ID. Decoding leaves a payload that is not encrypted as it is (histories
 * written before the keys were set keep replaying); one under a key ID the source does not know, or
 * one that fails authentication, is an error naming the key ID, never passed through.
 */
export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly source: PayloadKeySource) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = await this.source.encryptionKey();
    const keyId = Buffer.from(id);
    return payloads.map((payload) => {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
      cipher.setAAD(keyId);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const data = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
          [CIPHER_METADATA]: Buffer.from(CIPHER),
          [KEY_ID_METADATA]: keyId,
        },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(payloads.map((payload) => this.decodeOne(payload)));
  }

  private async decodeOne(payload: Payload): Promise<Payload> {
    const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
    if (!encoding || Buffer.from(encoding).toString() !== ENCRYPTED_ENCODING) return payload;
    const keyIdBytes = payload.metadata?.[KEY_ID_METADATA];
    if (!keyIdBytes) throw new ValueError('an encrypted payload names no encryption key ID');
    const id = Buffer.from(keyIdBytes).toString();
    const cipherName = payload.metadata?.[CIPHER_METADATA];
    if (cipherName && Buffer.from(cipherName).toString() !== CIPHER) {
      throw new ValueError(`payload under key "${id}" uses an unknown cipher: ${Buffer.from(cipherName)}`);
    }
    const found = await this.source.decryptionKey(id);
    if (!found) {
      throw new ValueError(
        `payload encrypted under key ID "${id}", which is not among the configured payload keys ` +
          '(SETTLE_PAYLOAD_KEYS): add it back after the current key',
      );
    }
    const data = Buffer.from(payload.data ?? []);
    if (data.length < NONCE_BYTES + TAG_BYTES) throw new ValueError(`payload under key "${id}" is truncated`);
    const decipher = createDecipheriv('aes-256-gcm', found.key, data.subarray(0, NONCE_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(keyIdBytes);
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([
        decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw new ValueError(
        `payload under key ID "${id}" does not decrypt with that key (altered, or another key of the same ID)`,
      );
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}
