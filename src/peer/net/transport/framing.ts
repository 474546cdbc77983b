/**
 * JSON frames over a libp2p stream: each frame is one length-prefixed UTF-8 JSON value
 * (@libp2p/utils lpStream), used by the sync and blob protocols.
 */
import type { AbortOptions, Stream } from '@libp2p/interface'
import { lpStream, type LengthPrefixedStream } from '@libp2p/utils'

/** Largest frame either protocol sends or accepts (bytes). */
export const MAX_FRAME_BYTES = 8 * 1024 * 1024
/** Unread bytes a stream may buffer before it is reset (a sender may run ahead of the reader). */
const MAX_BUFFER_BYTES = 64 * 1024 * 1024

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export interface JsonFrames {
  write(value: unknown, options?: AbortOptions): Promise<void>
  /** Raw bytes as one frame (blob chunks). */
  writeBytes(bytes: Uint8Array, options?: AbortOptions): Promise<void>
  /** @throws when the stream ends, a frame is too long or is not JSON */
  read(options?: AbortOptions): Promise<unknown>
  readBytes(options?: AbortOptions): Promise<Uint8Array>
  stream: Stream
}

export function jsonFrames (stream: Stream): JsonFrames {
  const lp: LengthPrefixedStream<Stream> = lpStream(stream, { maxDataLength: MAX_FRAME_BYTES, maxBufferSize: MAX_BUFFER_BYTES })
  return {
    stream,
    async write (value, options) { await lp.write(encoder.encode(JSON.stringify(value)), options) },
    async writeBytes (bytes, options) { await lp.write(bytes, options) },
    async read (options) { return JSON.parse(decoder.decode((await lp.read(options)).subarray())) },
    async readBytes (options) { return (await lp.read(options)).subarray() }
  }
}
