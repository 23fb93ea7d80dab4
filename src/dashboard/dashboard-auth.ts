import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';

/**
 * Login of the dashboard. bull-board has none of its own, and it shows every queue's jobs, so
 * one is required whenever the dashboard listens beyond loopback.
 * - `token`: `Authorization: Bearer <token>`; a browser may also log in with basic auth, any
 *   user name and the token as password.
 * - `user` + `password`: HTTP basic auth (RFC 7617), both must match.
 */
export interface DashboardAuth {
  readonly token?: string;
  readonly user?: string;
  readonly password?: string;
}

/** True for addresses only this machine can reach: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127(?:\.\d{1,3}){3}$/.test(bare) || /^::ffff:127(?:\.\d{1,3}){3}$/.test(bare);
}

/** True when `auth` configures a login (a token, or a user with a password). */
export function hasLogin(auth: DashboardAuth | undefined): boolean {
  return Boolean(auth && (auth.token || (auth.user && auth.password)));
}

// Compared as SHA-256 digests so timingSafeEqual gets equal lengths and the length of the
// secret does not leak through timing either.
const same = (given: string, expected: string): boolean =>
  timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(expected).digest());

/**
 * Express middleware enforcing `auth`: 401 with a `WWW-Authenticate` challenge (so a browser
 * asks) unless the request carries a matching bearer token or basic credentials. Never logs or
 * echoes what was sent.
 */
export function requireLogin(auth: DashboardAuth): RequestHandler {
  return (req, res, next) => {
    const header = req.headers.authorization ?? '';
    const [scheme, value = ''] = header.split(' ', 2);
    let ok = false;
    if (scheme?.toLowerCase() === 'bearer' && auth.token) ok = same(value, auth.token);
    else if (scheme?.toLowerCase() === 'basic') {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const user = colon < 0 ? decoded : decoded.slice(0, colon);
      const password = colon < 0 ? '' : decoded.slice(colon + 1);
      if (auth.user && auth.password) ok = same(user, auth.user) && same(password, auth.password);
      else if (auth.token) ok = same(password, auth.token);
    }
    if (ok) return next();
    res.setHeader('WWW-Authenticate', 'Basic realm="rollout-queue dashboard", charset="UTF-8"');
    res.status(401).type('text/plain').send('login required (see docs/dashboard.md)\n');
  };
}
