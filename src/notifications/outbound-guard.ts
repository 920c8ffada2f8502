import { BlockList, isIP, type LookupFunction } from "node:net";
import { lookup as dnsLookup, type LookupAddress } from "node:dns";

/**
 * The SSRF guard of every outbound connection (webhooks, SMS and push providers, SMTP). Tenants name
 * the hosts, so without it a provider URL could reach the service's own network: its database, its
 * cloud metadata endpoint, loopback admin ports. Checked where it cannot be dodged: on the addresses
 * DNS answers at connect time (so a name that resolves inward, or re-resolves inward later, is
 * refused), on literal addresses, and on every redirect hop (each hop connects through this lookup).
 * OUTBOUND_ALLOW_PRIVATE=true turns it off, for tests and closed networks.
 */

const blocked = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8], // "this network", 0.0.0.0 included
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved and broadcast
] as const) {
  blocked.addSubnet(net, bits, "ipv4");
}
for (const [net, bits] of [
  ["::", 128], // unspecified
  ["::1", 128],
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated, still routed inward)
  ["fc00::", 7], // unique local
  ["ff00::", 8], // multicast
] as const) {
  blocked.addSubnet(net, bits, "ipv6");
}

/** IPv6 forms that carry an IPv4 address: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::/96). */
function embeddedIpv4(address: string): string | null {
  const m = /^(?:::ffff:|::|64:ff9b::)((?:\d{1,3}\.){3}\d{1,3})$/i.exec(address);
  if (m) return m[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const hi = parseInt(hex[1], 16);
  const lo = parseInt(hex[2], 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
}

/** Whether an IP address is one no outbound message may reach (loopback, private, link-local, ...). */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const family = isIP(bare);
  if (family === 4) return blocked.check(bare, "ipv4");
  if (family !== 6) return true;
  const v4 = embeddedIpv4(bare.toLowerCase());
  if (v4 !== null) return blocked.check(v4, "ipv4");
  return blocked.check(bare, "ipv6");
}

/** A refused destination: not worth retrying, and said without the address's details beyond the host. */
export class OutboundBlockedError extends Error {
  readonly code = "EOUTBOUNDBLOCKED";
  constructor(host: string) {
    super(`${host} resolves to a private, loopback or otherwise internal address (set OUTBOUND_ALLOW_PRIVATE=true to allow)`);
    this.name = "OutboundBlockedError";
  }
}

/** Which addresses outbound connections may not reach; nothing under OUTBOUND_ALLOW_PRIVATE=true. */
export type ForbiddenAddress = (address: string) => boolean;

export function forbiddenAddresses(allowPrivate: boolean): ForbiddenAddress {
  return allowPrivate ? () => false : isForbiddenAddress;
}

/**
 * A `lookup` for net/http/tls connections that refuses a name when any of its addresses is internal
 * (one inward answer among public ones is how DNS rebinding gets through a filter that checks one).
 */
export function guardedLookup(forbidden: ForbiddenAddress): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, "", 0);
      if (addresses.some((a) => forbidden(a.address))) {
        return callback(new OutboundBlockedError(hostname) as NodeJS.ErrnoException, "", 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** Literal addresses skip `lookup`, so they are checked before connecting. */
export function assertHostAllowed(host: string, forbidden: ForbiddenAddress): void {
  const bare = host.replace(/^\[|\]$/g, "");
  if (isIP(bare) && forbidden(bare)) throw new OutboundBlockedError(host);
}

/** Resolves a host to one allowed address (for clients such as SMTP that resolve names themselves). */
export function resolveAllowed(host: string, forbidden: ForbiddenAddress): Promise<string> {
  assertHostAllowed(host, forbidden);
  if (isIP(host.replace(/^\[|\]$/g, ""))) return Promise.resolve(host.replace(/^\[|\]$/g, ""));
  return new Promise((resolve, reject) => {
    guardedLookup(forbidden)(host, { all: false }, (err, address) => (err ? reject(err) : resolve(address as string)));
  });
}
