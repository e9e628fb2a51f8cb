// Which IP addresses an outbound request may reach: the public unicast ones.
// Everything else is "special" (loopback, private, link-local such as the
// cloud metadata service at 169.254.169.254, shared, documentation,
// multicast, reserved, and the IPv6 forms that carry an IPv4 address:
// IPv4-mapped, IPv4-compatible, IPv4-translated and NAT64), and loopback is
// the one special kind that plain http may still go to, when an operator
// allows private addresses (guard.ts). Tables only: no DNS, no sockets.
import { BlockList, isIP } from "node:net";

// Two lists: a list with an IPv6 rule for ::ffff:0:0/96 would match every IPv4 address, and the IPv4
// list also matches the IPv4-mapped forms of its ranges (::ffff:127.0.0.1).
const SPECIAL_V4 = new BlockList();
const SPECIAL_V6 = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  SPECIAL_V4.addSubnet(network, prefix, "ipv4");
// The forms that embed an IPv4 address are refused whole, whatever address they carry: NAT64,
// IPv4-compatible (::/96, deprecated by RFC 4291, which covers :: and ::1 too) and IPv4-translated
// (::ffff:0:0:0/96, RFC 2765). A host may route any of them to the IPv4 address inside.
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["::", 96],
  ["::ffff:0:0:0", 96],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const)
  SPECIAL_V6.addSubnet(network, prefix, "ipv6");

const LOOPBACK_V4 = new BlockList();
LOOPBACK_V4.addSubnet("127.0.0.0", 8, "ipv4");
const LOOPBACK_V6 = new BlockList();
LOOPBACK_V6.addAddress("::1", "ipv6");

/** Whether an address is not a public unicast one (anything that is not an IP address counts as special). */
export function isSpecialAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return SPECIAL_V4.check(address, "ipv4");
  return SPECIAL_V6.check(address, "ipv6") || SPECIAL_V4.check(address, "ipv6");
}

/** Whether an address is this machine's loopback: 127.0.0.0/8 (also IPv4-mapped) or ::1. */
export function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return LOOPBACK_V4.check(address, "ipv4");
  if (family === 6) return LOOPBACK_V6.check(address, "ipv6") || LOOPBACK_V4.check(address, "ipv6");
  return false;
}
