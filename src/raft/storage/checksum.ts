// CRC32 (zlib's, hardware-accelerated in Node >= 20.15) guards every stored record: a flipped
// bit on disk must stop the node rather than be replicated or voted on.

import { crc32 } from 'node:zlib';

export function checksum(data: Uint8Array): number {
  return crc32(data) >>> 0;
}
