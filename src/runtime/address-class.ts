import { isIPv4, isIPv6 } from 'node:net';

/**
 * What an IP address reaches, for the outbound guard (`outbound.ts`): `public`; `private` (RFC 1918,
 * carrier-grade NAT, benchmarking, IPv6 unique-local and site-local) and `loopback` (127/8, ::1, and
 * the unspecified 0.0.0.0/8 and ::, which reach this machine) — reachable only where allowed;
 * `link_local` (169.254/16, fe80::/10), `metadata` (the cloud instance-metadata services) and
 * `not_unicast` (multicast, broadcast, reserved) — never reached. An IPv6 address that carries an
 * IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, IPv4-compatible, NAT64
 * `64:ff9b::/96` and `64:ff9b:1::/48` (each place RFC 6052 may put it), 6to4 `2002::/16`, Teredo
 * `2001::/32`) is the class of the IPv4 address it carries — the worst, where it could carry several.
 */
export type AddressClass = 'public' | 'private' | 'loopback' | 'link_local' | 'metadata' | 'not_unicast';

/** The classes no URL may reach, whoever configured it. */
export const NEVER_REACHED: ReadonlySet<AddressClass> = new Set<AddressClass>(['link_local', 'metadata', 'not_unicast']);

/** How a refusal names a class. */
export const CLASS_WORDS: Readonly<Record<AddressClass, string>> = {
  public: 'a public address',
  private: 'a private address',
  loopback: 'a loopback address',
  link_local: 'a link-local address',
  metadata: 'a cloud metadata address',
  not_unicast: 'not a unicast address',
};

/** The 4 or 16 bytes of an IP address (IPv6 possibly in brackets, or ending in a dotted IPv4), or undefined. */
export function addressBytes(text: string): Uint8Array | undefined {
  const ip = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (isIPv4(ip)) return Uint8Array.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) return undefined;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  const v4 = dotted !== null ? addressBytes(dotted[1] as string) : undefined;
  const hex =
    dotted !== null && v4 !== undefined
      ? `${ip.slice(0, -(dotted[1] as string).length)}${(((v4[0] as number) << 8) | (v4[1] as number)).toString(16)}:${(((v4[2] as number) << 8) | (v4[3] as number)).toString(16)}`
      : ip;
  const [head, tail] = hex.includes('::') ? (hex.split('::') as [string, string]) : [hex, undefined];
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

const zeros = (b: Uint8Array, from: number, to: number): boolean => b.subarray(from, to).every((x) => x === 0);

function ipv4Class(b: Uint8Array): AddressClass {
  const [a = 0, c = 0, d = 0, e = 0] = b;
  if (a === 169 && c === 254 && d === 169 && e === 254) return 'metadata';
  // Alibaba Cloud's metadata service, inside the carrier-grade NAT range.
  if (a === 100 && c === 100 && d === 100 && e === 200) return 'metadata';
  if (a === 169 && c === 254) return 'link_local';
  if (a === 0 || a === 127) return 'loopback';
  if (a === 10 || (a === 172 && c >= 16 && c <= 31) || (a === 192 && c === 168) || (a === 100 && c >= 64 && c <= 127) || (a === 198 && (c === 18 || c === 19)))
    return 'private';
  if (a >= 224) return 'not_unicast';
  return 'public';
}

/** The classes from the one to refuse first: where an address could be read several ways, the worst reading counts. */
const SEVERITY: readonly AddressClass[] = ['metadata', 'link_local', 'not_unicast', 'loopback', 'private', 'public'];
const worst = (classes: readonly AddressClass[]): AddressClass => SEVERITY.find((c) => classes.includes(c)) ?? 'public';

/** Where RFC 6052 puts the IPv4 address under a /48, /56, /64 and /96 prefix (bits 64–71 are skipped). */
const NAT64_POSITIONS: readonly (readonly number[])[] = [
  [6, 7, 9, 10],
  [7, 9, 10, 11],
  [9, 10, 11, 12],
  [12, 13, 14, 15],
];
const bytesAt = (b: Uint8Array, at: readonly number[]): Uint8Array => Uint8Array.from(at.map((i) => b[i] as number));

function ipv6Class(b: Uint8Array): AddressClass {
  const first = ((b[0] as number) << 8) | (b[1] as number);
  if (zeros(b, 0, 15)) return b[15] === 0 || b[15] === 1 ? 'loopback' : ipv4Class(b.subarray(12));
  if (zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return ipv4Class(b.subarray(12));
  // IPv4-translated (SIIT, ::ffff:0:0/96).
  if (zeros(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(b, 10, 12)) return ipv4Class(b.subarray(12));
  if (zeros(b, 0, 12)) return ipv4Class(b.subarray(12));
  if (first === 0x0064 && b[2] === 0xff && b[3] === 0x9b) {
    // The local-use prefix 64:ff9b:1::/48 may be split into /48 … /96 networks: every place the
    // IPv4 address could be is read, and the worst counts. The well-known 64:ff9b::/96 has it last.
    if (b[4] === 0 && b[5] === 1) return worst(NAT64_POSITIONS.map((at) => ipv4Class(bytesAt(b, at))));
    return ipv4Class(b.subarray(12));
  }
  if (first === 0x2002) return ipv4Class(b.subarray(2, 6));
  // Teredo (2001::/32): the server's IPv4 address, and the client's, its bits inverted.
  if (first === 0x2001 && b[2] === 0 && b[3] === 0)
    return worst([ipv4Class(b.subarray(4, 8)), ipv4Class(Uint8Array.from(b.subarray(12, 16), (x) => x ^ 0xff))]);
  // AWS's metadata service over IPv6: fd00:ec2::254.
  if (first === 0xfd00 && b[2] === 0x0e && b[3] === 0xc2 && zeros(b, 4, 14) && b[14] === 0x02 && b[15] === 0x54) return 'metadata';
  if ((first & 0xffc0) === 0xfe80) return 'link_local';
  if ((first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfec0) return 'private';
  if ((first & 0xff00) === 0xff00) return 'not_unicast';
  return 'public';
}

/** The class of an IP address (any spelling `node:net` accepts, IPv6 in brackets too), or undefined when it is not one. */
export function addressClass(text: string): AddressClass | undefined {
  const b = addressBytes(text);
  return b === undefined ? undefined : b.length === 4 ? ipv4Class(b) : ipv6Class(b);
}
