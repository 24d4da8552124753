import { isIP } from 'node:net';
import { BlockedRange, blockedRange } from './address-policy';

export const MAX_URL_LENGTH = 2048;

/** Why `raw` cannot be a webhook URL, or null when it can (the host's addresses are checked at delivery). */
export function webhookUrlProblem(raw: string): string | null {
  if (raw.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `must use http or https, not ${url.protocol.slice(0, -1)}`;
  if (url.username || url.password)
    return 'must not contain credentials (deliveries are authenticated by their signature)';
  if (!url.hostname) return 'must name a host';
  return null;
}

/** The host of a URL when it is a literal IP address (brackets of IPv6 removed), else null. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) ? host : null;
}

/**
 * The one refusal text, for a private address and for a name that does not resolve alike: it never says
 * what a name resolved to (or whether it resolved), nor which range an address is in. It names the
 * setting, so an operator testing against a local receiver knows what to change.
 */
export const DESTINATION_NOT_ALLOWED =
  'destination not allowed: webhooks may only reach hosts with public addresses on port 80, 443 or 1024 and above (the operator setting SVC_WEBHOOK_ALLOW_PRIVATE=true lifts this for development)';

/** Ports a webhook may use unless private destinations are allowed: the web's own, and no system service's. */
export function portAllowed(raw: string): boolean {
  const url = new URL(raw);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return port === 80 || port === 443 || port >= 1024;
}

/** `localhost` and its subdomains: loopback by definition (RFC 6761 §6.3), whatever a resolver says. */
const isLocalhostName = (hostname: string): boolean => {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
};

/**
 * The blocked range of a URL whose host is a literal IP or a localhost name, known without a lookup;
 * any other hostname is checked each time it is resolved.
 */
export function literalHostBlocked(raw: string): { address: string; range: BlockedRange } | null {
  const url = new URL(raw);
  if (isLocalhostName(url.hostname)) return { address: url.hostname, range: 'loopback' };
  const address = literalAddress(url);
  if (!address) return null;
  const range = blockedRange(address);
  return range ? { address, range } : null;
}
